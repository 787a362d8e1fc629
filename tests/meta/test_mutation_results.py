"""The verdicts that scripts/mutation.py keeps in the repository, and its module excuses.

``.mutation/`` is scratch a fresh clone lacks; the verdicts kept in ``docs/mutation/results``
must come back where mutmut reads them, without overwriting a workdir's newer ones.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

_SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _load(name: str) -> object:
    spec = importlib.util.spec_from_file_location(name, _SCRIPTS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


sys.path.insert(0, str(_SCRIPTS))  # mutation.py imports mutation_messages
mutation = _load("mutation")

META = {
    "exit_code_by_key": {
        "ckptstore.paths.x_parse__mutmut_1": 1,
        "ckptstore.paths.x_parse__mutmut_2": 0,
    },
    "hash_by_function_name": {"x_parse": "abc"},
    "type_check_error_by_key": {},
    "durations_by_key": {"ckptstore.paths.x_parse__mutmut_1": 1.5},
    "estimated_durations_by_key": {"ckptstore.paths.x_parse__mutmut_1": 2.0},
}


@pytest.fixture
def kept(tmp_path, monkeypatch):
    results = tmp_path / "results"
    monkeypatch.setattr(mutation, "RESULTS", results)
    return results


def _workdir(root: Path, name: str = "local+memory") -> Path:
    workdir = root / name
    (workdir / "mutants" / "src" / "ckptstore").mkdir(parents=True)
    return workdir


def test_verdicts_are_kept_without_timings(tmp_path, kept):
    workdir = _workdir(tmp_path)
    (workdir / "mutants" / "src" / "ckptstore" / "paths.py.meta").write_text(json.dumps(META))
    mutation.keep_results(workdir)
    saved = json.loads((kept / "local+memory" / "paths.py.meta").read_text())
    assert saved["exit_code_by_key"] == META["exit_code_by_key"]
    assert saved["hash_by_function_name"] == {"x_parse": "abc"}
    assert saved["durations_by_key"] == {}
    assert saved["estimated_durations_by_key"] == {}


def test_a_fresh_workdir_gets_the_kept_verdicts(tmp_path, kept):
    (kept / "local+memory").mkdir(parents=True)
    (kept / "local+memory" / "paths.py.meta").write_text(json.dumps(META))
    fresh = tmp_path / "clone" / "local+memory"
    mutation.restore_results(fresh)
    restored = json.loads((fresh / "mutants" / "src" / "ckptstore" / "paths.py.meta").read_text())
    assert restored["exit_code_by_key"] == META["exit_code_by_key"]


def test_a_workdir_keeps_its_own_newer_verdicts(tmp_path, kept):
    (kept / "local+memory").mkdir(parents=True)
    (kept / "local+memory" / "paths.py.meta").write_text(json.dumps(META))
    workdir = _workdir(tmp_path)
    own = workdir / "mutants" / "src" / "ckptstore" / "paths.py.meta"
    own.write_text(json.dumps({**META, "exit_code_by_key": {}}))
    mutation.restore_results(workdir)
    assert json.loads(own.read_text())["exit_code_by_key"] == {}


def test_a_rerun_with_clauses_leaves_unreached_mutants_their_verdicts(tmp_path):
    """A survivor that none of the chosen clauses reaches stays 'survived', not 'no tests'."""
    workdir = _workdir(tmp_path)
    meta = workdir / "mutants" / "src" / "ckptstore" / "paths.py.meta"
    meta.write_text(json.dumps(META))
    before = mutation.verdicts(workdir)
    after = {**META, "exit_code_by_key": {
        "ckptstore.paths.x_parse__mutmut_1": 1,
        "ckptstore.paths.x_parse__mutmut_2": 33,
        "ckptstore.paths.x_parse__mutmut_3": 33,  # new: no verdict to give back
    }}  # fmt: skip
    meta.write_text(json.dumps(after))
    mutation.keep_verdicts_of_unreached(workdir, before)
    assert mutation.verdicts(workdir) == {
        "ckptstore.paths.x_parse__mutmut_1": 1,
        "ckptstore.paths.x_parse__mutmut_2": 0,
        "ckptstore.paths.x_parse__mutmut_3": 33,
    }


def test_a_module_entry_excuses_every_survivor_of_the_module(tmp_path, monkeypatch):
    toml = tmp_path / "excuses.toml"
    toml.write_text('[[outside_contract]]\nmodule = "ckptstore.config"\nwhy = "no target"\n')
    monkeypatch.setattr(mutation, "EQUIVALENTS", toml)
    monkeypatch.setattr(mutation, "mutant_diffs", lambda workdir, names: {})
    config = mutation.Mutant("ckptstore.config.x_check__mutmut_3", "survived", tmp_path)
    killed = mutation.Mutant("ckptstore.config.x_check__mutmut_4", "killed", tmp_path)
    other = mutation.Mutant("ckptstore.paths.x_parse__mutmut_1", "survived", tmp_path)
    mutation.classify([config, killed, other])
    assert config.outside == "no target"
    assert killed.outside == ""  # a killed mutant needs no excuse and still counts as killed
    assert other.outside == ""


def test_a_mutant_entry_excuses_that_mutant_while_its_diff_is_the_same(tmp_path, monkeypatch):
    toml = tmp_path / "excuses.toml"
    toml.write_text(
        '[[outside_contract]]\nmutant = "ckptstore.paths.x_parse__mutmut_1"\n'
        'diff = """\n-    a = 1\n+    a = 2\n"""\nwhy = "a reference limit"\n'
        '[[outside_contract]]\nmutant = "ckptstore.paths.x_parse__mutmut_2"\n'
        'diff = """\n-    b = 1\n+    b = 2\n"""\nwhy = "another"\n'
    )
    monkeypatch.setattr(mutation, "EQUIVALENTS", toml)
    diffs = {
        "ckptstore.paths.x_parse__mutmut_1": "-    a = 1\n+    a = 2",
        "ckptstore.paths.x_parse__mutmut_2": "-    b = 1\n+    b = 3",
    }
    monkeypatch.setattr(mutation, "mutant_diffs", lambda workdir, names: diffs)
    same = mutation.Mutant("ckptstore.paths.x_parse__mutmut_1", "survived", tmp_path)
    changed = mutation.Mutant("ckptstore.paths.x_parse__mutmut_2", "survived", tmp_path)
    sibling = mutation.Mutant("ckptstore.paths.x_parse__mutmut_3", "survived", tmp_path)
    stale = mutation.classify([same, changed, sibling])
    assert (same.outside, same.equivalent) == ("a reference limit", "")
    assert changed.excuse == ""
    assert sibling.excuse == ""  # one mutant's entry excuses no other mutant of its function
    assert stale == ["ckptstore.paths.x_parse__mutmut_2: its diff changed; review the entry"]


@pytest.mark.parametrize(
    ("impl", "backend", "name"),
    [
        ("ckptstore", "local,memory", "local+memory"),
        ("ckptstore", "moto", "moto"),
        ("ckptstore-jobmanager", "local,memory", "ckptstore-jobmanager@local+memory"),
    ],
)
def test_a_workdir_name_gives_back_its_run(impl, backend, name):
    assert mutation.workdir_name(impl, backend) == name
    assert mutation.workdir_run(name) == (impl, backend)


def test_a_module_copied_plainly_over_its_mutants_is_found(tmp_path):
    """A run with fewer --modules copies the others plainly: their kept verdicts are hidden
    from mutmut's results until the workdir is generated again for every module."""
    workdir = _workdir(tmp_path)
    package = workdir / "mutants" / "src" / "ckptstore"
    (package / "paths.py.meta").write_text(json.dumps(META))
    (package / "paths.py").write_text("def parse(text):\n    return text\n")
    (package / "names.py.meta").write_text(json.dumps({**META, "exit_code_by_key": {}}))
    (package / "names.py").write_text("x = 1\n")
    (package / "api.py.meta").write_text(json.dumps(META))
    (package / "api.py").write_text("def x_parse__mutmut_orig(text):\n    return text\n")
    assert mutation.plainly_copied(workdir) == ["paths.py"]


def test_a_module_without_mutants_keeps_the_test_map(tmp_path):
    """A module mutmut finds nothing to mutate in (exception classes only) is always a plain
    copy: asking for every module again must not take it for a left-over copy and drop the
    test map (a moto run then collected its statistics anew, minutes, at every start)."""
    workdir = _workdir(tmp_path)
    package = workdir / "mutants" / "src" / "ckptstore"
    (package / "errors.py.meta").write_text(json.dumps({**META, "exit_code_by_key": {}}))
    (package / "errors.py").write_text("class Oops(Exception):\n    pass\n")
    stats = workdir / "mutants" / "mutmut-stats.json"
    stats.write_text("{}")
    mutation.forget_unmutated_copies(workdir, ["*.py"])
    assert (package / "errors.py").exists()
    assert stats.exists()
    (package / "paths.py.meta").write_text(json.dumps(META))
    (package / "paths.py").write_text("def parse(text):\n    return text\n")
    mutation.forget_unmutated_copies(workdir, ["*.py"])
    assert not (package / "paths.py").exists()
    assert not stats.exists()


def _defined(function: str) -> bool:
    """Whether mutmut's name of a function (``ckptstore.m.x_f``, ``ckptstore.m.xǁCǁf``)
    names a def of the reference."""
    module, _, name = function.rpartition(".")
    source = _SCRIPTS.parent / "reference" / Path(*module.split("."))
    source = source / "__init__.py" if source.is_dir() else source.with_suffix(".py")
    text = source.read_text(encoding="utf-8")
    if name.startswith("xǁ"):
        cls, method = name[2:].split("ǁ")
        return f"class {cls}" in text and f"def {method}(" in text
    return f"def {name[2:]}(" in text


def test_every_excuse_names_code_of_the_reference():
    """An entry for a function or mutant that no longer exists (renamed, removed as dead
    code) would silently excuse nothing: every entry names a def and says why."""
    import tomllib

    data = tomllib.loads(mutation.EQUIVALENTS.read_text(encoding="utf-8"))
    missing = []
    for kind in ("equivalent", "outside_contract"):
        for entry in data.get(kind, []):
            assert entry.get("why"), entry
            if "module" in entry:
                path = Path(*entry["module"].split(".")).with_suffix(".py")
                if not (_SCRIPTS.parent / "reference" / path).exists():
                    missing.append(entry["module"])
                continue
            function = entry.get("function") or entry["mutant"].rpartition("__mutmut_")[0]
            if not _defined(function):
                missing.append(function)
    assert not missing, missing


def test_every_mutant_is_excused_once():
    """Two entries for one mutant would leave one reason unread (the later wins)."""
    import tomllib
    from collections import Counter

    data = tomllib.loads(mutation.EQUIVALENTS.read_text(encoding="utf-8"))
    named = Counter(
        entry["mutant"]
        for kind in ("equivalent", "outside_contract")
        for entry in data.get(kind, [])
        if "mutant" in entry
    )
    assert not [name for name, count in named.items() if count > 1]


def test_only_mutants_with_cheap_tests_are_chosen(tmp_path, monkeypatch):
    """--max-seconds keeps the mutants whose tests mutmut estimates at most that long (and
    those no test reaches: they cost nothing), in the order given."""
    estimates = (
        "<no tests> ckptstore.s3.x_a__mutmut_1\n"
        "900ms ckptstore.s3.x_b__mutmut_2\n"
        "2000ms ckptstore.s3.x_c__mutmut_3\n"
        "61000ms ckptstore.s3.x_d__mutmut_4\n"
    )
    monkeypatch.setattr(mutation, "generate", lambda workdir: None)
    monkeypatch.setattr(mutation, "mutmut", lambda workdir, *args, capture=False: estimates)
    names = ["ckptstore.s3.x_d__mutmut_4", "ckptstore.s3.x_c__mutmut_3",
             "ckptstore.s3.x_b__mutmut_2", "ckptstore.s3.x_a__mutmut_1"]  # fmt: skip
    assert mutation.cheap_enough(tmp_path, names, 2.0) == names[1:]
    assert mutation.cheap_enough(tmp_path, names, 1.0) == names[2:]
    assert mutation.cheap_enough(tmp_path, [], 1.0) == []


def test_survivors_are_counted_by_class_and_still_count_against_the_rate(tmp_path):
    """mutation_survivors.toml classes survivors by function; it excuses none of them."""
    table = tmp_path / "survivors.toml"
    table.write_text(
        '[classes]\ntuning = "sizes"\n\n'
        '[[survivor]]\nfunction = "ckptstore.paths.x_parse"\nclass = "tuning"\nwhy = "limits"\n\n'
        '[[survivor]]\nfunction = "ckptstore.paths.x_gone"\nclass = "tuning"\nwhy = "old"\n',
        encoding="utf-8",
    )
    classes = mutation.SurvivorClasses.load(table)
    workdir = tmp_path / "w"
    mutants = [
        mutation.Mutant("ckptstore.paths.x_parse__mutmut_1", "survived", workdir),
        mutation.Mutant("ckptstore.paths.x_parse__mutmut_2", "survived", workdir),
        mutation.Mutant("ckptstore.paths.x_join__mutmut_1", "no tests", workdir),
        mutation.Mutant("ckptstore.paths.x_join__mutmut_2", "killed", workdir),
    ]
    text, payload = mutation.render(mutants, [], "local")
    report = mutation.summary(text, mutants, classes)
    assert "| tuning | 2 | sizes |" in report
    assert "| unreviewed | 1 | not reviewed yet |" in report
    assert "| `ckptstore.paths.x_parse` | survived | 2 | tuning: limits |" in report
    assert "| `ckptstore.paths.x_join` | no tests | 1 | unreviewed |" in report
    assert "- `ckptstore.paths.x_gone`" in report  # stale: no survivor of it any more
    assert payload["modules"]["all"]["kill_rate"] == pytest.approx(1 / 4)


def test_survivor_classes_must_be_declared(tmp_path):
    table = tmp_path / "survivors.toml"
    table.write_text(
        '[classes]\n\n[[survivor]]\nmodule = "ckptstore.paths"\nclass = "nope"\nwhy = "?"\n',
        encoding="utf-8",
    )
    with pytest.raises(SystemExit, match="unknown class 'nope'"):
        mutation.SurvivorClasses.load(table)


def test_the_repository_survivor_table_loads():
    classes = mutation.SurvivorClasses.load()
    assert classes.entries
    assert all(kind in classes.classes for kind, _ in classes.entries.values())


def test_current_hashes_name_functions_and_methods_as_mutmut_does(tmp_path):
    (tmp_path / "paths.py").write_text(
        "def parse(x):\n    return x\n\nclass Store:\n    def open(self):\n        pass\n",
        encoding="utf-8",
    )
    hashes = mutation.current_hashes(tmp_path)
    assert set(hashes) == {"ckptstore.paths.x_parse", "ckptstore.paths.xǁStoreǁopen"}
    assert all(len(digest) == 12 for digest in hashes.values())
    # the real reference: a function and a method mutmut mutates
    defined = mutation.current_hashes()
    assert "ckptstore.io_errors.x_causal_chain" in defined
    assert "ckptstore.s3.xǁExclusiveUploadǁwrite" in defined
    assert "ckptstore.x___getattr__" in defined  # the package's own module


def test_current_hashes_are_the_hashes_mutmut_keeps():
    """The kept results hold mutmut's own hashes: where the code did not change since, ours
    are equal (most functions did not change since the last runs)."""
    current = mutation.current_hashes()
    kept = {}
    for meta in mutation.RESULTS.glob("*/*.py.meta"):
        module = f"ckptstore.{meta.name.removesuffix('.py.meta')}"
        for function, digest in (
            json.loads(meta.read_text()).get("hash_by_function_name", {}).items()
        ):
            kept[f"{module}.{function}", digest] = True
    equal = sum(current.get(function) == digest for function, digest in kept)
    assert equal > len(kept) / 2, f"only {equal} of {len(kept)} kept hashes are ours"


def test_verdicts_of_changed_functions_are_left_out(tmp_path):
    meta = tmp_path / "mutants" / "src" / "ckptstore"
    meta.mkdir(parents=True)
    (meta / "paths.py.meta").write_text(
        json.dumps({"hash_by_function_name": {"x_parse": "aaaaaaaaaaaa", "x_join": "bbbbbbbbbbbb"}})
    )
    mutants = [
        mutation.Mutant("ckptstore.paths.x_parse__mutmut_1", "survived", tmp_path),
        mutation.Mutant("ckptstore.paths.x_join__mutmut_1", "killed", tmp_path),
        mutation.Mutant("ckptstore.paths.x_gone__mutmut_1", "survived", tmp_path),
    ]
    current = {"ckptstore.paths.x_parse": "aaaaaaaaaaaa", "ckptstore.paths.x_join": "cccccccccccc"}
    fresh, stale = mutation.current_verdicts(tmp_path, mutants, current)
    assert [m.name for m in fresh] == ["ckptstore.paths.x_parse__mutmut_1"]
    assert stale == {"ckptstore.paths.x_join", "ckptstore.paths.x_gone"}
