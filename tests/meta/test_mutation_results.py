"""The verdicts that tools/mutation/mutation.py keeps on the branch mutation-state, and its
module excuses.

``.mutation/`` is scratch a fresh clone lacks; the verdicts kept on the orphan branch
``mutation-state`` (``results/<workdir>/``) must come back where mutmut reads them, without
overwriting a workdir's newer ones, and ``--keep-results`` must commit new ones there without
touching the checkout. Those tests work in a scratch git repository, never this one.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
_TOOL = _ROOT / "tools" / "mutation"


def _load(name: str) -> object:
    spec = importlib.util.spec_from_file_location(name, _TOOL / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


sys.path.insert(0, str(_TOOL))  # mutation.py imports mutation_messages
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


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A scratch repository with one commit on main (the user's checkout), as STATE_REPO."""
    for variable in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{variable}_NAME", "test")
        monkeypatch.setenv(f"GIT_{variable}_EMAIL", "test@example.invalid")
    checkout = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(checkout)], check=True)
    (checkout / "README.md").write_text("main\n")
    _git(checkout, "add", "README.md")
    _git(checkout, "commit", "-q", "-m", "main")
    monkeypatch.setattr(mutation, "STATE_REPO", checkout)
    monkeypatch.setattr(mutation, "_MISSING_SAID", [])
    return checkout


def _workdir(root: Path, name: str = "local+memory") -> Path:
    workdir = root / name
    (workdir / "mutants" / "src" / "ckptstore").mkdir(parents=True)
    return workdir


def _with_meta(root: Path, meta: dict[str, object], name: str = "local+memory") -> Path:
    workdir = _workdir(root, name)
    (workdir / "mutants" / "src" / "ckptstore" / "paths.py.meta").write_text(json.dumps(meta))
    return workdir


def _kept(repo: Path, path: str) -> dict[str, object]:
    return dict(json.loads(_git(repo, "show", f"{mutation.STATE_BRANCH}:{path}")))


def test_verdicts_are_kept_on_the_branch_without_timings(tmp_path, repo):
    workdir = _with_meta(tmp_path / "scratch", META)
    commit = mutation.keep_results([workdir])
    assert commit == _git(repo, "rev-parse", "mutation-state")
    saved = _kept(repo, "results/local+memory/paths.py.meta")
    assert saved["exit_code_by_key"] == META["exit_code_by_key"]
    assert saved["hash_by_function_name"] == {"x_parse": "abc"}
    assert saved["durations_by_key"] == {}
    assert saved["estimated_durations_by_key"] == {}
    # an orphan branch: no history of main in it
    assert _git(repo, "rev-list", "mutation-state") == commit


def test_keeping_leaves_the_checkout_alone(tmp_path, repo):
    """The commit is made with a temporary index: HEAD, the index and the files stay."""
    (repo / "README.md").write_text("edited, not staged\n")
    (repo / "new.txt").write_text("staged\n")
    _git(repo, "add", "new.txt")
    before = (_git(repo, "rev-parse", "HEAD"), _git(repo, "status", "--porcelain"))
    mutation.keep_results([_with_meta(tmp_path / "scratch", META)])
    assert (_git(repo, "rev-parse", "HEAD"), _git(repo, "status", "--porcelain")) == before
    assert _git(repo, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert (repo / "README.md").read_text() == "edited, not staged\n"
    assert not (repo / "results").exists()


def test_keeping_again_adds_a_commit_only_for_new_verdicts(tmp_path, repo):
    """Unchanged verdicts make no commit; new ones make a child that keeps the branch's other
    files (another workdir, the reviews)."""
    first = mutation.commit_state({"reviews/status.md": "open\n"}, "reviews")
    workdir = _with_meta(tmp_path / "scratch", META)
    second = mutation.keep_results([workdir])
    assert mutation.keep_results([workdir]) is None
    newer = {**META, "exit_code_by_key": {"ckptstore.paths.x_parse__mutmut_1": 0}}
    (workdir / "mutants" / "src" / "ckptstore" / "paths.py.meta").write_text(json.dumps(newer))
    third = mutation.keep_results([workdir])
    assert _git(repo, "rev-list", "mutation-state").split() == [third, second, first]
    assert _git(repo, "show", "mutation-state:reviews/status.md") == "open"
    kept = _kept(repo, "results/local+memory/paths.py.meta")
    assert kept["exit_code_by_key"] == {"ckptstore.paths.x_parse__mutmut_1": 0}


def test_a_fresh_workdir_gets_the_kept_verdicts(tmp_path, repo):
    mutation.keep_results([_with_meta(tmp_path / "old", META)])
    mutation.keep_results([_with_meta(tmp_path / "old", {**META, "exit_code_by_key": {}}, "moto")])
    assert mutation.kept_legs() == ["local+memory", "moto"]
    fresh = tmp_path / "clone" / "local+memory"
    mutation.restore_results(fresh)
    restored = json.loads((fresh / "mutants" / "src" / "ckptstore" / "paths.py.meta").read_text())
    assert restored["exit_code_by_key"] == META["exit_code_by_key"]
    assert restored["durations_by_key"] == {}


def test_a_workdir_keeps_its_own_newer_verdicts(tmp_path, repo):
    mutation.keep_results([_with_meta(tmp_path / "old", META)])
    workdir = _workdir(tmp_path / "scratch")
    own = workdir / "mutants" / "src" / "ckptstore" / "paths.py.meta"
    own.write_text(json.dumps({**META, "exit_code_by_key": {}}))
    mutation.restore_results(workdir)
    assert json.loads(own.read_text())["exit_code_by_key"] == {}


def test_without_the_branch_it_says_so_once_and_starts_from_scratch(tmp_path, repo, capsys):
    """A clone that fetched only main: one line, no verdict, and mutmut tests every mutant."""
    fresh = tmp_path / "clone" / "local+memory"
    mutation.restore_results(fresh)
    mutation.restore_results(tmp_path / "clone" / "moto")
    assert mutation.kept_legs() == []
    assert not (fresh / "mutants").exists()
    [line] = capsys.readouterr().out.splitlines()
    assert "no branch mutation-state" in line
    assert "git fetch origin mutation-state:mutation-state" in line


def test_a_clone_reads_the_remote_branch_and_keeps_on_top_of_it(tmp_path, repo):
    """A clone of every branch has only origin/mutation-state: its verdicts are read from
    there, and the first --keep-results makes the local branch on top of it."""
    first = mutation.keep_results([_with_meta(tmp_path / "old", META)])
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    assert _git(clone, "branch", "--list", "mutation-state") == ""
    mutation.STATE_REPO = clone  # restored by the fixture's monkeypatch
    fresh = tmp_path / "scratch" / "local+memory"
    mutation.restore_results(fresh)
    assert (fresh / "mutants" / "src" / "ckptstore" / "paths.py.meta").exists()
    newer = {**META, "exit_code_by_key": {"ckptstore.paths.x_parse__mutmut_2": 1}}
    (fresh / "mutants" / "src" / "ckptstore" / "paths.py.meta").write_text(json.dumps(newer))
    second = mutation.keep_results([fresh])
    assert _git(clone, "rev-list", "mutation-state").split() == [second, first]


def test_keeping_refuses_a_branch_checked_out_in_a_worktree(tmp_path, repo):
    """Moving a branch that a worktree has checked out would leave that worktree's files
    behind its HEAD: the verdicts are to be committed there instead."""
    mutation.keep_results([_with_meta(tmp_path / "old", META)])
    _git(repo, "worktree", "add", "-q", str(tmp_path / "state"), "mutation-state")
    newer = {**META, "exit_code_by_key": {}}
    with pytest.raises(SystemExit, match="checked out in a worktree"):
        mutation.keep_results([_with_meta(tmp_path / "new", newer)])


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
    source = _ROOT / "reference" / Path(*module.split("."))
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
                if not (_ROOT / "reference" / path).exists():
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
        "<no tests> ckptstore.stores.s3.x_a__mutmut_1\n"
        "900ms ckptstore.stores.s3.x_b__mutmut_2\n"
        "2000ms ckptstore.stores.s3.x_c__mutmut_3\n"
        "61000ms ckptstore.stores.s3.x_d__mutmut_4\n"
    )
    monkeypatch.setattr(mutation, "generate", lambda workdir: None)
    monkeypatch.setattr(mutation, "mutmut", lambda workdir, *args, capture=False: estimates)
    names = ["ckptstore.stores.s3.x_d__mutmut_4", "ckptstore.stores.s3.x_c__mutmut_3",
             "ckptstore.stores.s3.x_b__mutmut_2", "ckptstore.stores.s3.x_a__mutmut_1"]  # fmt: skip
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
        mutation.Mutant("ckptstore.paths.x_join__mutmut_3", "survived", workdir, equivalent="="),
        mutation.Mutant("ckptstore.config.x_c__mutmut_1", "not checked", workdir, outside="-"),
    ]
    text, payload = mutation.render(mutants, [], "local")
    report = mutation.summary(text, mutants, classes)
    # excused as the table counts them, those not run yet included
    assert "## Excused (2: 1 equivalent, 1 outside contract, 0 message text)" in report
    assert "| all | 1 | 0 | 2 | 1 | 1 | 1 | 0 | 0 | 25.0% |" in report
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
    assert "ckptstore.stores.s3.xǁExclusiveUploadǁwrite" in defined
    assert "ckptstore.x___getattr__" in defined  # the package's own module


def test_current_hashes_are_mutmuts_own():
    """Ours are mutmut's hashes of every function and method of the reference, so a kept
    verdict counts exactly while its function is unchanged (mutmut's
    ``compute_function_hashes``, the function that writes ``hash_by_function_name``)."""
    file_mutation = pytest.importorskip(
        "mutmut.mutation.file_mutation", reason="mutmut is not installed (extra dev or mutation)"
    )
    theirs = {}
    for path in sorted(mutation.REFERENCE.rglob("*.py")):
        module = mutation._module_of(
            path.relative_to(mutation.REFERENCE).with_suffix("").as_posix()
        )
        for function, digest in file_mutation.compute_function_hashes(path.read_text()).items():
            theirs[f"{module}.{function}"] = digest
    assert len(theirs) > 500
    assert mutation.current_hashes() == theirs


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


MOVES_TOML = """
[modules]
"ckptstore.access" = "ckptstore.filesystem.access"
"ckptstore.s3" = "ckptstore.stores.s3"
"ckptstore.operations" = "ckptstore.stores.operations"

[functions."ckptstore.s3"]
x_policy_of = "ckptstore.stores.retry"

[functions."ckptstore.filesystems"]
x_delete_file = "ckptstore.operations"
"""


def _old_layout(root: Path) -> Path:
    """A workdir of verdicts kept before the wings: flat modules, one split in two."""
    workdir = _workdir(root)
    package = workdir / "mutants" / "src" / "ckptstore"
    metas = {
        "access": {"x_check": "a" * 12},
        "s3": {"x_head": "b" * 12, "x_policy_of": "c" * 12},
        "filesystems": {"x_delete_file": "d" * 12, "x_gone": "e" * 12},
    }
    for stem, hashes in metas.items():
        codes = {f"ckptstore.{stem}.{f}__mutmut_{n}": n % 2 for f in hashes for n in (1, 2)}
        meta = {"exit_code_by_key": codes, "hash_by_function_name": hashes}
        (package / f"{stem}.py.meta").write_text(json.dumps(meta))
    return workdir


def test_kept_verdicts_follow_the_moves_of_their_modules(tmp_path, repo, monkeypatch):
    """A verdict kept under a module's old name comes back under the module that defines its
    function now: whole modules, a split one function by function, moves that chain; a
    function the table does not move stays where it was (its verdicts stale)."""
    # ckptstore.filesystems.x_delete_file: to ckptstore.operations, then ckptstore.stores
    mutation.keep_results([_old_layout(tmp_path / "old")])
    moves = tmp_path / "moves.toml"
    moves.write_text(MOVES_TOML, encoding="utf-8")
    monkeypatch.setattr(mutation, "MOVES", moves)
    fresh = tmp_path / "clone" / "local+memory"
    mutation.restore_results(fresh)
    package = fresh / "mutants" / "src" / "ckptstore"
    found = sorted(p.relative_to(package).as_posix() for p in package.rglob("*.py.meta"))
    assert found == [
        "filesystem/access.py.meta",
        "filesystems.py.meta",
        "stores/operations.py.meta",
        "stores/retry.py.meta",
        "stores/s3.py.meta",
    ]
    retry = json.loads((package / "stores" / "retry.py.meta").read_text())
    assert retry["hash_by_function_name"] == {"x_policy_of": "c" * 12}
    assert retry["exit_code_by_key"] == {
        "ckptstore.stores.retry.x_policy_of__mutmut_1": 1,
        "ckptstore.stores.retry.x_policy_of__mutmut_2": 0,
    }
    # the rest of a split module follows its module's entry
    s3 = json.loads((package / "stores" / "s3.py.meta").read_text())
    assert s3["hash_by_function_name"] == {"x_head": "b" * 12}
    left = json.loads((package / "filesystems.py.meta").read_text())
    assert left["hash_by_function_name"] == {"x_gone": "e" * 12}
    current = {
        "ckptstore.filesystem.access.x_check": "a" * 12,  # moved unchanged
        "ckptstore.stores.s3.x_head": "f" * 12,  # changed on the way
        "ckptstore.stores.retry.x_policy_of": "c" * 12,
        "ckptstore.stores.operations.x_delete_file": "d" * 12,
    }
    mutants = [
        mutation.Mutant(key, "killed", fresh)
        for meta in package.rglob("*.py.meta")
        for key in json.loads(meta.read_text())["exit_code_by_key"]
    ]
    fresh_verdicts, stale = mutation.current_verdicts(fresh, mutants, current)
    assert {m.function for m in fresh_verdicts} == {
        "ckptstore.filesystem.access.x_check",
        "ckptstore.stores.retry.x_policy_of",
        "ckptstore.stores.operations.x_delete_file",
    }
    assert stale == {"ckptstore.stores.s3.x_head", "ckptstore.filesystems.x_gone"}


def test_verdicts_under_their_current_name_are_not_moved(tmp_path, repo, monkeypatch):
    """Verdicts kept since the move, in the subpackages' files (two ``access.py`` of two
    wings apart), win over those a file of the old name still holds for the same function."""
    workdir = _old_layout(tmp_path / "old")
    mutation.keep_results([workdir])
    package = workdir / "mutants" / "src" / "ckptstore"
    for stem in ("access", "s3", "filesystems"):
        (package / f"{stem}.py.meta").unlink()
    for wing in ("filesystem", "jobmanager"):
        (package / wing).mkdir()
        meta = {
            "exit_code_by_key": {f"ckptstore.{wing}.access.x_check__mutmut_1": 0},
            "hash_by_function_name": {"x_check": f"{wing[0]}" * 12},
        }
        (package / wing / "access.py.meta").write_text(json.dumps(meta))
    mutation.keep_results([workdir])
    moves = tmp_path / "moves.toml"
    moves.write_text(MOVES_TOML, encoding="utf-8")
    kept = mutation.kept_results("local+memory", mutation.Moves.load(moves))
    assert "access.py.meta" not in kept
    for wing in ("filesystem", "jobmanager"):
        data = json.loads(kept[f"{wing}/access.py.meta"])
        assert data["hash_by_function_name"] == {"x_check": f"{wing[0]}" * 12}
        assert data["exit_code_by_key"] == {f"ckptstore.{wing}.access.x_check__mutmut_1": 0}


def test_moves_in_a_circle_are_refused(tmp_path):
    moves = tmp_path / "moves.toml"
    moves.write_text('[modules]\n"ckptstore.a" = "ckptstore.b"\n"ckptstore.b" = "ckptstore.a"\n')
    with pytest.raises(SystemExit, match="circle"):
        mutation.Moves.load(moves).module_of("ckptstore.a", "x_f")


def test_the_repository_moves_name_modules_of_the_reference():
    """Every module the table moves to is a module of the reference now, and a module moved
    whole is one no more (a module of that name again would lose its verdicts to the old
    one's destination)."""
    moves = mutation.Moves.load()
    modules = {
        mutation._module_of(p.relative_to(mutation.REFERENCE).with_suffix("").as_posix())
        for p in mutation.REFERENCE.rglob("*.py")
    }
    targets = set(moves.modules.values())
    targets |= {new for functions in moves.functions.values() for new in functions.values()}
    assert targets <= modules, sorted(targets - modules)
    assert not set(moves.modules) & modules
