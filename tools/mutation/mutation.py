"""Mutation testing of the reference with the conformance suite as the test (issue 11, item 7).

The question it answers is how strong the suite is: of the faults mutmut plants in
``reference/ckptstore``, how many does ``pytest --impl=ckptstore`` notice? Not run in CI (a
full run takes hours on two cores); ``tox -e mutation`` runs it, and verdicts are kept between
runs, so a rerun tests only the mutants of functions that changed.

mutmut wants the code it mutates under ``src/`` and runs pytest from its ``mutants/`` copy, so
this script builds a scratch tree under ``.mutation/<legs>/``: ``src/ckptstore`` (mutated) and
``src/ckptconform`` (copied as is, so that the suite's test ids resolve inside the tree), plus
a ``pyproject.toml`` made of this repository's ``[tool.mutmut]`` table, the modules asked for
and the suite's command line. Child processes the suite starts (fresh-process checks) see the
mutated code through ``PYTHONPATH``.

Verdicts live out of the main branch, on the orphan branch ``mutation-state`` of this
repository: ``results/<workdir>/<module>.py.meta`` are mutmut's ``.meta`` files (exit code per
mutant, hash per function) without their timings, and ``reviews/`` holds the long reviews of
the survivors. A workdir that lacks a module's ``.meta`` (a fresh clone has no ``.mutation/``)
gets the branch's, so mutmut tests only the mutants of functions whose hash changed since;
``--keep-results`` commits the workdirs' verdicts back to the branch (a commit made with a
temporary index: neither the checkout, its index nor its ``HEAD`` is touched). Where the branch
is missing (a clone that fetched only main: ``git fetch origin mutation-state:mutation-state``
brings it), the script says so in one line and mutmut starts from scratch (hours). Verdicts
kept under a module's old name are read under its new one (``mutation_moves.toml``, beside
this script: modules moved whole or function by function), so a function that moved unchanged
keeps them.

The report (``mutation-report/mutation.md`` and ``.json``) gives, per module, the mutants
killed, survived, not reached by any test ("no tests", counted as survivors) and timed out;
the kill rate is (killed + timeout) / (all - excused). ``--merge`` counts a mutant killed on
any leg configuration as killed and also writes the one-page ``docs/mutation.md`` (the table,
the survivors by class and by function). ``mutation_equivalents.toml`` (beside this script)
excuses mutants, each with its reason: ``[[equivalent]]`` names one mutant and carries its
diff (an entry that no longer matches its mutant is reported as stale rather than silently
excusing another one); ``[[outside_contract]]`` names a function of the reference whose
behaviour no clause can observe through ``ckptstore.api`` (a storage's own equality, its
representation), so a suite that ignores it is right to; ``[[message_text]]`` names a
parameter whose argument shapes only an error's words (``mutation_messages.py`` compares the
mutant's syntax tree with the original's). Excused mutants are listed in the report, never
dropped. ``mutation_survivors.toml`` classes the survivors that count against the rate.

A report needs mutmut (the ``[mutation]`` extra) but runs no test: from the kept verdicts it
writes each leg's mutants into ``.mutation/<leg>/`` (a few minutes on a fresh clone), then
reads mutmut's results and diffs there.

Usage::

    python tools/mutation/mutation.py                  # every module, local + memory legs
    python tools/mutation/mutation.py --modules filesystem/streams.py --max-children 2
    python tools/mutation/mutation.py --backend=moto --modules stores/s3.py
    python tools/mutation/mutation.py --impl=ckptstore-jobmanager --modules 'jobmanager/*.py'
    python tools/mutation/mutation.py --report-only    # rebuild the report from the last run
    python tools/mutation/mutation.py --report-only --merge   # over every leg configuration
    python tools/mutation/mutation.py --report-only --merge --keep-results  # commit verdicts
    python tools/mutation/mutation.py --rerun-survivors       # after adding tests
    python tools/mutation/mutation.py --backend=moto --modules filesystem/streams.py \
        --survivors-of .mutation/local+memory          # S3-only paths of the survivors
    python tools/mutation/mutation.py --backend=moto --modules filesystem/pointers.py \
        --survivors-of .mutation/core-local+memory --diff-matches 'token|options'
    python tools/mutation/mutation.py --rerun-survivors --clauses=DIS-6,STR-12
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mutation_messages import MessageParameter, message_reason

#: this folder: the script, its excuses and its survivor classes
TOOL = Path(__file__).resolve().parent
ROOT = TOOL.parent.parent
REFERENCE = ROOT / "reference" / "ckptstore"
SUITE_PACKAGE = ROOT / "conformance" / "ckptconform"
EQUIVALENTS = TOOL / "mutation_equivalents.toml"
#: Why the survivors that count against the rate survive, by function (reviewed by hand).
SURVIVOR_CLASSES = TOOL / "mutation_survivors.toml"
#: The one-page report that ``--merge`` writes, kept in the main branch.
REPORT = ROOT / "docs" / "mutation.md"
#: Where modules of the reference moved or split, so that kept verdicts follow them (``Moves``).
MOVES = TOOL / "mutation_moves.toml"
#: The repository whose orphan branch ``STATE_BRANCH`` keeps the verdicts of each workdir
#: (``results/<workdir>/<module>.py.meta``): mutmut's per-module ``.meta`` files (exit code per
#: mutant, hash per function) without their timings. ``.mutation/`` is scratch that a fresh
#: clone does not have; from these files its first run knows every verdict again, and mutmut
#: tests only the mutants of functions whose hash changed since.
STATE_REPO = ROOT
STATE_BRANCH = "mutation-state"
STATE_RESULTS = "results"
KILLED = ("killed", "timeout")
EXCUSED = ("equivalent", "outside contract", "message text")
#: mutmut's exit code for a mutant that no selected test reaches ("no tests")
NO_TESTS_EXIT = 33
UNREACHED = "no tests"


@dataclass
class Mutant:
    """One mutant: its mutmut name, status and diff (for survivors)."""

    name: str
    status: str
    workdir: Path
    diff: str = ""
    equivalent: str = ""
    outside: str = ""
    message: str = ""

    @property
    def excuse(self) -> str:
        """Why the suite is right to let it survive ('' for a real survivor)."""
        return self.equivalent or self.outside or self.message

    @property
    def function(self) -> str:
        """mutmut's name of the mutated function (``ckptstore.paths.x_parse``)."""
        return self.name.rpartition("__mutmut_")[0]

    @property
    def module(self) -> str:
        return self.name.split(".x_")[0].split(".xǁ")[0]


def _excuse_kind(mutant: Mutant) -> str:
    """The column of an excused mutant: the first of its excuses (see ``EXCUSED``)."""
    if mutant.equivalent:
        return "equivalent"
    return "outside contract" if mutant.outside else "message text"


@dataclass
class Summary:
    """Counts per module and overall."""

    by_module: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))

    def add(self, mutant: Mutant) -> None:
        status = mutant.status
        if mutant.status not in KILLED and mutant.excuse:
            status = _excuse_kind(mutant)
        self.by_module[mutant.module][status] += 1

    def total(self) -> Counter[str]:
        overall: Counter[str] = Counter()
        for counts in self.by_module.values():
            overall.update(counts)
        return overall


#: mutmut's word for a mutant no run has tested yet (e.g. of a function added since).
NOT_RUN = "not checked"


def kill_rate(counts: Counter[str]) -> float | None:
    """(killed + timeout) / (all - excused - skipped - not run); None when nothing counts.

    A mutant no run has tested has no verdict: the report lists it under "other" and leaves
    it out of the rate rather than count it as killed or survived.
    """
    excused = sum(counts[c] for c in EXCUSED) + counts["skipped"] + counts[NOT_RUN]
    considered = sum(counts.values()) - excused
    if considered <= 0:
        return None
    return sum(counts[s] for s in KILLED) / considered


def mutmut_table() -> dict[str, object]:
    """This repository's ``[tool.mutmut]`` table."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return dict(data["tool"]["mutmut"])


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"unsupported [tool.mutmut] value {value!r}")


def sync_tree(source: Path, target: Path) -> bool:
    """Copy ``source`` to ``target``, keeping files that did not change (mutmut's cache).

    Returns whether anything changed.
    """
    target.mkdir(parents=True, exist_ok=True)
    changed = False
    wanted = set()
    for path in source.rglob("*"):
        if "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        rel = path.relative_to(source)
        wanted.add(rel)
        dest = target / rel
        if path.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
            continue
        if dest.exists() and dest.read_bytes() == path.read_bytes():
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
        changed = True
    for path in sorted(target.rglob("*"), reverse=True):
        rel = path.relative_to(target)
        if "__pycache__" in rel.parts or rel in wanted:
            continue
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
        changed = True
    return changed


def prepare(workdir: Path, modules: list[str], backend: str, impl: str) -> None:
    """Build the scratch tree mutmut runs in.

    When the reference or the suite changed since the last run, mutmut's map of which tests
    reach which function is dropped, so that it is collected again: mutmut would otherwise
    take a changed or new function for one no test reaches. Results of unchanged functions
    are kept.
    """
    restore_results(workdir)
    reference_changed = sync_tree(REFERENCE, workdir / "src" / "ckptstore")
    suite_changed = sync_tree(SUITE_PACKAGE, workdir / "src" / "ckptconform")
    if reference_changed or suite_changed:
        (workdir / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    table = mutmut_table()
    table["source_paths"] = ["src"]
    table["only_mutate"] = [f"src/ckptstore/{m}" for m in modules]
    table["pytest_add_cli_args"] = [
        f"--impl={impl}",
        f"--backend={backend}",
        *table.get("pytest_add_cli_args", []),  # type: ignore[misc]
    ]
    lines = ["[tool.mutmut]"] + [f"{key} = {_toml_value(value)}" for key, value in table.items()]
    (workdir / "pyproject.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # mutmut puts mutants/src first on sys.path; it must exist before Python starts, or the
    # import system caches the missing directory and the original code is imported instead.
    (workdir / "mutants" / "src").mkdir(parents=True, exist_ok=True)
    forget_unmutated_copies(workdir, modules)


def forget_unmutated_copies(workdir: Path, modules: list[str]) -> None:
    """Remove mutmut's plain copies of modules that are to be mutated now.

    mutmut copies a module it does not mutate with a fresh modification time and later takes
    that copy for an up-to-date mutated file, so a module asked for after an earlier run
    that left it out would never be mutated. A mutated module holds mutmut's trampolines
    (``__mutmut_orig``); a plain copy does not, even where an earlier run left a ``.meta``
    beside it (a run with fewer ``--modules`` in the same workdir copies the others plainly
    over their mutated files). The ``.meta`` stays: mutmut keeps the results of the
    functions that did not change.
    """
    mutated_dir = workdir / "mutants" / "src" / "ckptstore"
    forgot = False
    for pattern in modules:
        for copy in mutated_dir.rglob(pattern):
            if copy.suffix != ".py" or nothing_to_mutate(copy):
                continue
            if "__mutmut_orig" not in copy.read_text(encoding="utf-8"):
                copy.unlink()
                forgot = True
    if forgot:
        # the recorded test-to-function map knows none of the new modules' functions
        (workdir / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)


def nothing_to_mutate(module: Path) -> bool:
    """Whether mutmut found no mutant in ``module`` (its ``.meta`` lists none, as for a module of
    exception classes only): its plain copy is what mutmut writes every time, not a copy left
    by a run with fewer ``--modules``; forgetting it would drop the test map at every run."""
    meta = module.with_name(module.name + ".meta")
    return meta.exists() and not _read_meta(meta).get("exit_code_by_key")


def _meta_dir(workdir: Path) -> Path:
    return workdir / "mutants" / "src" / "ckptstore"


def slim_results(workdir: Path) -> dict[str, str]:
    """The workdir's verdicts as kept: by the ``.meta`` file's path below the package
    (``stores/s3.py.meta``: two subpackages may have modules of one name), one entry per line,
    no timings (they change at every run and decide nothing)."""
    slim = {}
    for meta in sorted(_meta_dir(workdir).rglob("*.py.meta")):
        name = meta.relative_to(_meta_dir(workdir)).as_posix()
        slim[name] = _slim_text(_read_meta(meta))
    return slim


def _slim_text(data: Mapping[str, Any]) -> str:
    """A ``.meta`` file's text as kept: verdicts and hashes, sorted, without timings."""
    kept = {
        "exit_code_by_key": data.get("exit_code_by_key", {}),
        "hash_by_function_name": data.get("hash_by_function_name", {}),
        "type_check_error_by_key": data.get("type_check_error_by_key", {}),
        "durations_by_key": {},
        "estimated_durations_by_key": {},
    }
    return json.dumps(kept, indent=1, sort_keys=True) + "\n"


def keep_results(workdirs: list[Path]) -> str | None:
    """Commit the workdirs' verdicts to ``STATE_BRANCH`` as ``results/<workdir>/``; the other
    files of the branch (other workdirs, ``reviews/``) stay. Returns the new commit, None when
    the branch holds these verdicts already."""
    files = {
        f"{STATE_RESULTS}/{workdir.name}/{name}": text
        for workdir in workdirs
        for name, text in slim_results(workdir).items()
    }
    legs = ", ".join(workdir.name for workdir in workdirs)
    return commit_state(files, f"Mutation verdicts of {legs}")


def verdicts(workdir: Path) -> dict[str, int | None]:
    """mutmut's exit code per mutant in ``workdir`` (None: not run)."""
    found: dict[str, int | None] = {}
    for meta in _meta_dir(workdir).rglob("*.py.meta"):
        found.update(_read_meta(meta).get("exit_code_by_key", {}))
    return found


def keep_verdicts_of_unreached(workdir: Path, before: Mapping[str, int | None]) -> None:
    """After a rerun with ``--clauses``: a mutant that none of those clauses' tests reaches
    comes back as 'no tests'; give it back the verdict the whole suite gave it before
    ('survived' stays 'survived' rather than turning into 'no tests')."""
    for meta in _meta_dir(workdir).rglob("*.py.meta"):
        data = _read_meta(meta)
        codes = data.get("exit_code_by_key", {})
        restored = {
            name: before[name]
            for name, code in codes.items()
            if code == NO_TESTS_EXIT and before.get(name) not in (None, NO_TESTS_EXIT)
        }
        if restored:
            codes.update(restored)
            meta.write_text(json.dumps(data, indent=2), encoding="utf-8")


def _read_meta(meta: Path) -> dict[str, Any]:
    """A ``.meta`` file, read again while a running mutmut is rewriting it."""
    for _ in range(50):
        try:
            return dict(json.loads(meta.read_text(encoding="utf-8")))
        except json.JSONDecodeError:
            time.sleep(0.1)
    raise SystemExit(f"{meta} stays unreadable (not JSON)")


_GENERATE = """
from mutmut.__main__ import (
    copy_also_copy_files, copy_src_dir, create_mutants, setup_source_paths,
    store_lines_covered_by_tests,
)
from mutmut.mutation.trampoline import set_mutant_under_test
set_mutant_under_test("mutant_generation")
copy_src_dir()
copy_also_copy_files()
setup_source_paths()
store_lines_covered_by_tests()
create_mutants(2)
"""


def plainly_copied(workdir: Path) -> list[str]:
    """Modules whose verdicts the workdir keeps but whose mutated file a later run with
    fewer ``--modules`` replaced by a plain copy: ``mutmut results`` and the diffs then miss
    them (a JobManager run on ``jobmanager_*.py`` hid its verdicts of ``memory_streams``)."""
    hidden = []
    for meta in sorted(_meta_dir(workdir).rglob("*.py.meta")):
        module = meta.with_suffix("")
        if nothing_to_mutate(module):
            continue
        if not module.exists() or "__mutmut_orig" not in module.read_text(encoding="utf-8"):
            hidden.append(module.name)
    return hidden


def complete(workdir: Path) -> None:
    """Make every kept verdict of ``workdir`` readable: mutants written for every module (a
    fresh clone has only the kept verdicts; a run with fewer ``--modules`` left plain copies)."""
    fresh_clone = not (_meta_dir(workdir) / "__init__.py").exists()
    if fresh_clone or plainly_copied(workdir):
        impl, backend = workdir_run(workdir.name)
        prepare(workdir, ["*.py"], backend, impl)
        generate(workdir)


def generate(workdir: Path) -> None:
    """Write the mutants of a prepared workdir without running any (what ``mutmut run`` does
    first), so that a report can show kept verdicts and their diffs in a fresh clone."""
    result = in_workdir(workdir, "-c", _GENERATE)
    if result.returncode != 0:
        raise SystemExit(f"generating the mutants of {workdir} failed:\n{result.stderr[-2000:]}")


def restore_results(workdir: Path) -> None:
    """Put the kept verdicts where mutmut looks for them, where the workdir has none."""
    for name, data in kept_results(workdir.name).items():
        target = _meta_dir(workdir) / name
        if name.endswith(".py.meta") and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)


def _git(
    *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``git`` in ``STATE_REPO`` (never raises on exit)."""
    return subprocess.run(
        ["git", "-C", str(STATE_REPO), *args],
        input=stdin,
        env=None if env is None else {**os.environ, **env},
        capture_output=True,
        check=False,
    )


def _git_out(*args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None) -> str:
    """``git``'s output; a failure stops the script with git's words."""
    result = _git(*args, stdin=stdin, env=env)
    if result.returncode != 0:
        detail = result.stderr.decode(errors="replace").strip()
        raise SystemExit(f"git {' '.join(args)} exited {result.returncode}: {detail}")
    return result.stdout.decode().strip()


#: Whether the script said already that this clone lacks the branch (it says so once).
_MISSING_SAID: list[bool] = []


def _local_state() -> str | None:
    """The commit of the local branch ``STATE_BRANCH``, None where there is none."""
    result = _git("rev-parse", "--verify", "--quiet", f"refs/heads/{STATE_BRANCH}^{{commit}}")
    return result.stdout.decode().strip() if result.returncode == 0 else None


def _remote_state() -> str | None:
    """The commit of a remote's branch ``STATE_BRANCH`` (``origin/mutation-state`` in a clone
    of every branch), None where there is none."""
    remote = _git(
        "for-each-ref", "--count=1", "--format=%(objectname)", f"refs/remotes/*/{STATE_BRANCH}"
    )
    found = remote.stdout.decode().strip()
    return found if remote.returncode == 0 and found else None


def state_commit() -> str | None:
    """The commit that holds the kept verdicts: the local branch, else a remote's branch of
    that name; None (said once, in one line) where the clone has neither."""
    commit = _local_state() or _remote_state()
    if commit:
        return commit
    if not _MISSING_SAID:
        _MISSING_SAID.append(True)
        print(f"no branch {STATE_BRANCH} in {STATE_REPO} (git fetch origin "
              f"{STATE_BRANCH}:{STATE_BRANCH} brings it): no kept verdicts, mutmut starts from "
              "scratch (hours)", flush=True)  # fmt: skip
    return None


def kept_legs() -> list[str]:
    """The workdirs whose verdicts the branch keeps (``results/<workdir>/``)."""
    commit = state_commit()
    if commit is None:
        return []
    listing = _git("ls-tree", "-z", f"{commit}:{STATE_RESULTS}")
    if listing.returncode != 0:
        return []
    entries = [line.split(b"\t", 1) for line in listing.stdout.split(b"\0") if line]
    return sorted(name.decode() for info, name in entries if info.split()[1] == b"tree")


def kept_results(workdir_name: str, moves: Moves | None = None) -> dict[str, bytes]:
    """The files the branch keeps for a workdir (``results/<workdir>/``), by path below that
    folder, with the verdicts of modules that moved since under their current modules'
    files (``moves``, by default ``mutation_moves.toml``: see :func:`moved_results`)."""
    commit = state_commit()
    if commit is None:
        return {}
    folder = f"{STATE_RESULTS}/{workdir_name}/"
    archive = _git("archive", "--format=tar", commit, folder)
    if archive.returncode != 0:  # no such folder on the branch
        return {}
    found = {}
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        for member in tar.getmembers():
            extracted = tar.extractfile(member) if member.isfile() else None
            if extracted is not None and member.name.startswith(folder):
                found[member.name.removeprefix(folder)] = extracted.read()
    return moved_results(found, Moves.load() if moves is None else moves)


@dataclass(frozen=True)
class Moves:
    """``mutation_moves.toml``: where the modules of the reference that moved are now, whole
    or function by function (a module split into several).

    mutmut keys a verdict by module and function, and keeps it while the function's hash
    (of its code alone) stays the same. A function that moved unchanged keeps its hash: with
    its kept verdicts renamed to its new module they count again. One that changed on the way
    gets a new hash, and its verdicts are stale as any changed function's."""

    #: old module -> new module (a module moved whole)
    modules: Mapping[str, str]
    #: old module -> {function (mutmut's name below the module) -> new module}
    functions: Mapping[str, Mapping[str, str]]

    @classmethod
    def load(cls, path: Path = MOVES) -> Moves:
        if not path.exists():
            return cls({}, {})
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return cls(dict(data.get("modules", {})), dict(data.get("functions", {})))

    def module_of(self, module: str, function: str) -> str:
        """The module that defines ``function`` of ``module`` now, through every later move
        (``module`` itself where it did not move)."""
        seen = [module]
        while True:
            moved = self.functions.get(module, {}).get(function) or self.modules.get(module)
            if moved is None:
                return module
            if moved in seen:
                raise SystemExit(f"{MOVES.name}: {function} moves in a circle: {seen}")
            seen.append(moved)
            module = moved


def _meta_path(module: str, reference: Path = REFERENCE) -> str:
    """The path of a module's ``.meta`` file below the package (``_module_of`` reversed):
    ``ckptstore.stores.s3`` -> ``stores/s3.py.meta``, a package's -> ``<it>/__init__.py.meta``."""
    parts = module.split(".")[1:]
    if not parts or (reference / Path(*parts)).is_dir():
        parts.append("__init__")
    return "/".join(parts) + ".py.meta"


def _function_of_key(module: str, key: str) -> str:
    """mutmut's name of a mutant's function below its module
    (``ckptstore.paths.x_parse__mutmut_2`` -> ``x_parse``)."""
    return key.removeprefix(f"{module}.").rpartition("__mutmut_")[0]


def moved_results(files: Mapping[str, bytes], moves: Moves) -> dict[str, bytes]:
    """Kept ``.meta`` files (path below the package -> bytes) with each function's hash and
    verdicts moved to the file of the module that defines it now, its mutants renamed
    (``ckptstore.filesystems.x_delete_file__mutmut_3`` ->
    ``ckptstore.stores.operations.x_delete_file__mutmut_3``).

    Files that nothing moves out of or into stay as they are; a file left without functions
    goes. Verdicts kept under a module's current name win: a function's verdicts moved from
    an old name fill in only a function that the current module's file lacks (verdicts kept
    before the move, never rewritten since)."""
    tables = {name: json.loads(raw) for name, raw in files.items() if name.endswith(".py.meta")}
    found = dict(files)
    touched: set[str] = set()
    for name in sorted(tables):
        module = _module_of(name.removesuffix(".py.meta"))
        for function in sorted(_functions_of(module, tables[name])):
            moved = moves.module_of(module, function)
            if moved == module:
                continue
            target = _meta_path(moved)
            verdicts = _take_function(tables[name], module, function)
            into = tables.setdefault(target, {})
            if function not in into.get("hash_by_function_name", {}):
                _put_function(into, moved, function, verdicts)
            touched |= {name, target}
    for name in sorted(touched):
        if _functions_of(_module_of(name.removesuffix(".py.meta")), tables[name]):
            found[name] = _slim_text(tables[name]).encode()
        else:
            found.pop(name, None)
    return found


#: The fields of a kept ``.meta`` file that are keyed by mutant.
_BY_MUTANT = ("exit_code_by_key", "type_check_error_by_key")


def _functions_of(module: str, data: Mapping[str, Any]) -> set[str]:
    """The functions a ``.meta`` file of ``module`` holds a hash or a verdict of."""
    functions = set(data.get("hash_by_function_name", {}))
    for field_name in _BY_MUTANT:
        functions |= {_function_of_key(module, key) for key in data.get(field_name, {})}
    return functions


def _take_function(data: dict[str, Any], module: str, function: str) -> dict[str, Any]:
    """Remove ``function``'s hash and verdicts from a ``.meta`` file of ``module``; returns
    them with the mutants named below the module (``x_parse__mutmut_2``)."""
    taken: dict[str, Any] = {}
    hashes = data.get("hash_by_function_name", {})
    if function in hashes:
        taken["hash"] = hashes.pop(function)
    for field_name in _BY_MUTANT:
        by_key = data.get(field_name, {})
        mine = [key for key in by_key if _function_of_key(module, key) == function]
        taken[field_name] = {key.removeprefix(f"{module}."): by_key.pop(key) for key in mine}
    return taken


def _put_function(
    data: dict[str, Any], module: str, function: str, taken: Mapping[str, Any]
) -> None:
    """Add what :func:`_take_function` took to a ``.meta`` file of ``module``."""
    if "hash" in taken:
        data.setdefault("hash_by_function_name", {})[function] = taken["hash"]
    for field_name in _BY_MUTANT:
        by_key = data.setdefault(field_name, {})
        by_key.update({f"{module}.{key}": value for key, value in taken[field_name].items()})


def commit_state(files: Mapping[str, str], message: str) -> str | None:
    """Commit ``files`` (path on the branch -> text) on top of ``STATE_BRANCH``: an orphan
    branch where the clone has none yet (or on a remote's branch of that name).

    The commit is made with a temporary index of its own (``read-tree``, ``update-index``,
    ``write-tree``, ``commit-tree``, then ``update-ref`` from the commit the branch had), so the
    checkout, its index and its ``HEAD`` are never touched. Returns the new commit, None when
    the branch holds these files already.
    """
    if not files:
        return None
    checked_out = _git_out("worktree", "list", "--porcelain").splitlines()
    if f"branch refs/heads/{STATE_BRANCH}" in checked_out:
        raise SystemExit(f"{STATE_BRANCH} is checked out in a worktree of {STATE_REPO}: "
                         "commit the verdicts there, or remove that worktree")  # fmt: skip
    local = _local_state()
    parent = local or _remote_state()
    with tempfile.TemporaryDirectory(prefix="mutation-state-") as scratch:
        index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        if parent:
            _git_out("read-tree", parent, env=index)
        paths = sorted(files)
        written = [Path(scratch) / f"{number}.blob" for number in range(len(paths))]
        for path, copy in zip(paths, written, strict=True):
            copy.write_text(files[path], encoding="utf-8")
        names = "\n".join(map(str, written)).encode()
        blobs = _git_out("hash-object", "-w", "--stdin-paths", stdin=names).split()
        entries = "".join(f"100644 {b}\t{path}\n" for b, path in zip(blobs, paths, strict=True))
        _git_out("update-index", "--add", "--index-info", stdin=entries.encode(), env=index)
        tree = _git_out("write-tree", env=index)
    if parent and tree == _git_out("rev-parse", f"{parent}^{{tree}}"):
        return None
    commit = _git_out("commit-tree", tree, *(["-p", parent] if parent else []), "-m", message)
    _git_out("update-ref", "-m", message, f"refs/heads/{STATE_BRANCH}", commit, local or "0" * 40)
    return commit


def workdir_name(impl: str, backend: str) -> str:
    """``.mutation/<name>``: the legs (``local+memory``), after ``<impl>@`` for another target."""
    legs = backend.replace(",", "+")
    return legs if impl == "ckptstore" else f"{impl}@{legs}"


def workdir_run(name: str) -> tuple[str, str]:
    """The target and ``--backend`` of a workdir's name (:func:`workdir_name` reversed)."""
    impl, _, legs = name.rpartition("@")
    return impl or "ckptstore", legs.replace("+", ",")


#: ``--clauses`` of a rerun: only the suite's tests of these clauses run (``PYTEST_ADDOPTS``).
_CLAUSES: list[str] = []


def environment(workdir: Path) -> dict[str, str]:
    """The suite's environment: the mutated code first, and a failed SHOULD clause fails.

    ``--strict-should`` (and a rerun's ``--clauses``) go through ``PYTEST_ADDOPTS`` rather
    than ``[tool.mutmut]``: a SHOULD clause that fails has noticed the mutant (the run
    reports WARN), and mutmut would drop every recorded result if its pytest arguments
    changed.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = str(workdir / "mutants" / "src")
    # ci's derandomized examples, without shrinking a counterexample: a mutant is killed by
    # its first one, and shrinking it (seconds per property on moto) changes no verdict
    env.setdefault("HYPOTHESIS_PROFILE", "gate")
    extra = " --strict-should" + (f" --clauses={','.join(_CLAUSES)}" if _CLAUSES else "")
    env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')}{extra}".strip()
    return env


def in_workdir(
    workdir: Path, *args: str, capture: bool = True, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python <args>`` in ``workdir`` with the suite's environment (never raises on exit)."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=workdir,
        env=environment(workdir),
        input=stdin,
        check=False,
        text=True,
        capture_output=capture,
    )


#: mutmut's name of the file-system storage's constructor, which every test reaches when the
#: suite runs the ckptstore target (with --impl=ckptstore-jobmanager none does, and widening
#: by it adds no test).
STORAGE_INIT = "ckptstore.filesystem.storage.xǁFileSystemCheckpointStorageǁ__init__"

#: Functions that the reference calls only the first time a process (or a file-system
#: instance) needs them, and caches: mutmut maps each to the one test that happened to call it
#: first in its statistics run, so a mutant of it would run that test alone. Their mutants run
#: the tests of the function that calls them on every use as well.
RUN_WITH_TESTS_OF = {
    "ckptstore.stores.s3.x__probe": "ckptstore.stores.s3.x_probe_conditional_writes",
    "ckptstore.stores.s3.x_instantiate": "ckptstore.stores.registry.x_get_filesystem",
    "ckptstore.stores.retry.x_policy_of": "ckptstore.stores.registry.x_get_filesystem",
    "ckptstore.stores.registry.x__instantiate": "ckptstore.stores.registry.x_get_filesystem",
    "ckptstore.stores.registry.x__instantiate_or_fail": (
        "ckptstore.stores.registry.x_get_filesystem"
    ),
    # run when ckptstore is imported: only a fresh process (SER-4, SPK) imports it with the
    # mutant active, so they run with the tests of every storage
    "ckptstore.redaction.x_get_logger": STORAGE_INIT,
    "ckptstore.redaction.xǁRedactingFilterǁ__init__": STORAGE_INIT,
}

# `mutmut run` whose map of tests by function gains, for each function of RUN_WITH_TESTS_OF,
# the tests of the function named there, right after mutmut collected or loaded the map.
_RUN = """
import sys
import mutmut.__main__ as cli
from mutmut.state import state

WIDEN = {widen!r}
collect = cli.collect_or_load_stats

def collect_and_widen(*args, **kwargs):
    result = collect(*args, **kwargs)
    tests = state().tests_by_mangled_function_name
    for function, caller in WIDEN.items():
        if function in tests or caller in tests:
            tests[function] = set(tests.get(function, ())) | set(tests.get(caller, ()))
    return result

cli.collect_or_load_stats = collect_and_widen
sys.argv = ["mutmut", *sys.argv[1:]]
cli.cli()
"""


def mutmut(workdir: Path, *args: str, capture: bool = False) -> str:
    run = args[:1] == ("run",)
    command = ("-c", _RUN.format(widen=RUN_WITH_TESTS_OF)) if run else ("-m", "mutmut")
    result = in_workdir(workdir, *command, *args, capture=capture)
    if result.returncode != 0:
        detail = (result.stderr or "")[-2000:] if capture else ""
        raise SystemExit(f"mutmut {' '.join(args)} exited {result.returncode}\n{detail}")
    return result.stdout or ""


_RESULT_LINE = re.compile(r"^\s*(?P<name>ckptstore\.\S+): (?P<status>.+?)\s*$")


_ESTIMATE_LINE = re.compile(r"^(?:(?P<ms>\d+)ms|<no tests>) (?P<name>ckptstore\.\S+)$")


def cheap_enough(workdir: Path, names: list[str], max_seconds: float) -> list[str]:
    """The mutants among ``names`` whose tests (those that reach the mutated function, as
    mutmut runs them) took at most ``max_seconds`` on the unmutated code.

    A survivor costs all of its tests; on an object-store leg a function every test reaches
    costs the whole suite. Estimates come from mutmut's map of tests and their durations,
    collected first when the workdir has none.
    """
    if not names:
        return []
    generate(workdir)
    out = mutmut(workdir, "print-time-estimates", *names, capture=True)
    limit = max_seconds * 1000
    chosen = set()
    for match in map(_ESTIMATE_LINE.match, out.splitlines()):
        if match and (match["ms"] is None or int(match["ms"]) <= limit):
            chosen.add(match["name"])
    return [name for name in names if name in chosen]


def read_results(workdir: Path) -> list[Mutant]:
    out = mutmut(workdir, "results", "--all", "true", capture=True)
    return [
        Mutant(match["name"], match["status"], workdir)
        for match in map(_RESULT_LINE.match, out.splitlines())
        if match
    ]


def _module_of(stem: str) -> str:
    """The module of the reference that the file ``<stem>.py`` (or its ``.meta``) holds;
    ``stem`` is its path below the package without the suffix (``stores/s3``)."""
    parts = ["ckptstore", *Path(stem).parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def current_hashes(reference: Path = REFERENCE) -> dict[str, str]:
    """mutmut's name and hash of each function and method the reference defines now.

    The hash is mutmut's (the first 12 hex digits of the SHA-256 of the function's syntax
    tree dumped without field names), so it equals the one a workdir's ``.meta`` keeps for a
    function that has not changed since that workdir's last run.
    """
    hashes = {}
    for path in sorted(reference.rglob("*.py")):
        module = _module_of(path.relative_to(reference).with_suffix("").as_posix())
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            methods = [(f"{module}.x_", node)]
            if isinstance(node, ast.ClassDef):
                methods = [(f"{module}.xǁ{node.name}ǁ", item) for item in node.body]
            for prefix, function in methods:
                if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                    dump = ast.dump(function, annotate_fields=False).encode()
                    hashes[prefix + function.name] = hashlib.sha256(dump).hexdigest()[:12]
    return hashes


def kept_hashes(workdir: Path) -> dict[str, str]:
    """The hash of each mutated function as ``workdir`` last saw it (mutmut's ``.meta``)."""
    hashes = {}
    for meta in _meta_dir(workdir).rglob("*.py.meta"):
        stem = meta.relative_to(_meta_dir(workdir)).as_posix().removesuffix(".py.meta")
        module = _module_of(stem)
        for function, digest in _read_meta(meta).get("hash_by_function_name", {}).items():
            hashes[f"{module}.{function}"] = digest
    return hashes


def current_verdicts(
    workdir: Path, mutants: list[Mutant], current: Mapping[str, str]
) -> tuple[list[Mutant], set[str]]:
    """``workdir``'s verdicts of functions whose code is still the code it tested, and the
    functions whose verdicts it kept of other code (changed or removed since its last run:
    their mutant numbers name other mutants now, or none)."""
    seen = kept_hashes(workdir)
    fresh = [m for m in mutants if current.get(m.function, "gone") == seen.get(m.function)]
    return fresh, {m.function for m in mutants} - {m.function for m in fresh}


#: How good a verdict is, for merging leg configurations: killed anywhere is killed.
_RANK = {"killed": 0, "timeout": 1, "survived": 2, UNREACHED: 3}


def merge(runs: list[list[Mutant]]) -> list[Mutant]:
    """One verdict per mutant over several leg configurations: the best one."""
    best: dict[str, Mutant] = {}
    for mutants in runs:
        for mutant in mutants:
            current = best.get(mutant.name)
            if current is None or _RANK.get(mutant.status, 9) < _RANK.get(current.status, 9):
                best[mutant.name] = mutant
    return sorted(best.values(), key=lambda m: m.name)


# find_mutant reads the module's .meta, which a mutmut run beside may be rewriting: read again.
_DIFFS = """
import json, sys, time
from mutmut.__main__ import find_mutant, get_diff_for_mutant
def diff(name):
    for _ in range(50):
        try:
            return get_diff_for_mutant(name, path=find_mutant(name).path)
        except json.JSONDecodeError:
            time.sleep(0.1)
    raise SystemExit(f"the .meta of {name} stays unreadable")
print(json.dumps({name: diff(name) for name in json.load(sys.stdin)}))
"""


def mutant_diffs(workdir: Path, names: list[str]) -> dict[str, str]:
    """The changed lines of each mutant (one mutmut process for all, not one per mutant)."""
    if not names:
        return {}
    result = in_workdir(workdir, "-c", _DIFFS, stdin=json.dumps(names))
    if result.returncode != 0:
        raise SystemExit(f"reading the mutants' diffs failed:\n{result.stderr[-2000:]}")
    return {
        name: "\n".join(
            line
            for line in diff.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        )
        for name, diff in json.loads(result.stdout.splitlines()[-1]).items()
    }


def load_excuses(kind: str) -> list[dict[str, str]]:
    """The ``[[equivalent]]`` or ``[[outside_contract]]`` entries."""
    if not EQUIVALENTS.exists():
        return []
    data = tomllib.loads(EQUIVALENTS.read_text(encoding="utf-8"))
    return list(data.get(kind, []))


def _normalized(diff: str) -> str:
    return "\n".join(line.rstrip() for line in diff.strip().splitlines())


def classify(mutants: list[Mutant]) -> list[str]:
    """Fill in survivors' diffs and mark the excused ones; return stale entries.

    An entry that names one ``mutant`` (an ``[[equivalent]]``, or an ``[[outside_contract]]``
    for one mutant of a function that clauses do observe otherwise) carries the mutant's diff
    and is stale when the diff changed; a ``function`` or ``module`` entry excuses every
    survivor of it."""
    entries = {
        entry["mutant"]: {**entry, "kind": kind}
        for kind in ("equivalent", "outside_contract")
        for entry in load_excuses(kind)
        if "mutant" in entry
    }
    outside = {
        entry.get("function") or entry["module"]: entry["why"]
        for entry in load_excuses("outside_contract")
        if "mutant" not in entry
    }
    parameters = [MessageParameter.of(entry) for entry in load_excuses("message_text")]
    stale = []
    survivors = [m for m in mutants if m.status not in KILLED]
    diffs: dict[str, str] = {}
    for workdir in {m.workdir for m in survivors}:
        diffs.update(mutant_diffs(workdir, [m.name for m in survivors if m.workdir == workdir]))
    for mutant in survivors:
        mutant.diff = diffs.get(mutant.name, "")
        mutant.outside = outside.get(mutant.function, outside.get(mutant.module, ""))
        mutated = mutant.workdir / "mutants" / "src" / Path(*mutant.module.split("."))
        if not mutant.outside and mutated.with_suffix(".py").exists():
            mutant.message = message_reason(mutant.name, mutated.with_suffix(".py"), parameters)
        entry = entries.pop(mutant.name, None)
        if entry is None:
            continue
        if _normalized(entry["diff"]) != _normalized(mutant.diff):
            stale.append(f"{mutant.name}: its diff changed; review the entry")
        elif entry["kind"] == "equivalent":
            mutant.equivalent = entry["why"]
        else:
            mutant.outside = entry["why"]
    known = {m.name for m in mutants}
    stale += [
        f"{name}: killed now, the entry is not needed"
        if name in known
        else f"{name}: no such mutant any more"
        for name in entries
    ]
    return stale


@dataclass(frozen=True)
class SurvivorClasses:
    """``mutation_survivors.toml``: what each class of survivors is, and the class
    (with the reason) of the functions reviewed so far. Survivors still count against the
    rate: a class says why they survive and what would kill them, it excuses nothing."""

    classes: Mapping[str, str]
    #: function (mutmut's name) or module -> (class, why)
    entries: Mapping[str, tuple[str, str]]

    @classmethod
    def load(cls, path: Path = SURVIVOR_CLASSES) -> SurvivorClasses:
        if not path.exists():
            return cls({}, {})
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        classes = dict(data.get("classes", {}))
        entries = {}
        for entry in data.get("survivor", []):
            if entry["class"] not in classes:
                raise SystemExit(f"{path.name}: unknown class {entry['class']!r} in {entry}")
            entries[entry.get("function") or entry["module"]] = (entry["class"], entry["why"])
        return cls(classes, entries)

    def of(self, mutant: Mutant) -> tuple[str, str]:
        """The class and reason of a survivor; ``unreviewed`` where no entry names it."""
        return self.entries.get(mutant.function) or self.entries.get(
            mutant.module, (UNREVIEWED, "")
        )

    def stale(self, survivors: list[Mutant]) -> list[str]:
        """Entries that name no surviving mutant any more."""
        named = {m.function for m in survivors} | {m.module for m in survivors}
        return sorted(name for name in self.entries if name not in named)


UNREVIEWED = "unreviewed"


def summary(text: str, mutants: list[Mutant], survivor_classes: SurvivorClasses) -> str:
    """The one-page report (``docs/mutation.md``): the report's table, then its survivors by
    class and by function, and the excused mutants counted by kind (each one with its reason
    is in ``mutation-report/mutation-merged.md``)."""
    head = text.split("\n## ")[0].rstrip()
    survivors: Counter[tuple[str, str]] = Counter()
    by_class: Counter[str] = Counter()
    excused: Counter[str] = Counter()
    class_of: dict[str, tuple[str, str]] = {}
    counted = []
    for mutant in mutants:
        if mutant.status in KILLED:
            continue
        if mutant.excuse:  # counted as the table counts them, those not run yet included
            excused[_excuse_kind(mutant)] += 1
        elif mutant.status != NOT_RUN:
            survivors[(mutant.function, mutant.status)] += 1
            class_of[mutant.function] = survivor_classes.of(mutant)
            by_class[class_of[mutant.function][0]] += 1
            counted.append(mutant)
    lines = [head, "", f"## Survivors by class ({sum(by_class.values())})", ""]
    lines += ["Reviewed by function in tools/mutation/mutation_survivors.toml; they count against",
              "the rate all the same.", ""]  # fmt: skip
    lines += ["| class | mutants | what it is |", "|---|---|---|"]
    described = {**survivor_classes.classes, UNREVIEWED: "not reviewed yet"}
    lines += [f"| {name} | {n} | {described.get(name, '')} |" for name, n in by_class.most_common()]
    lines += ["", f"## Survivors by function ({sum(survivors.values())})", ""]
    lines += ["| function | status | mutants | class: why |", "|---|---|---|---|"]
    for (function, status), n in sorted(survivors.items()):
        kind, why = class_of[function]
        lines.append(f"| `{function}` | {status} | {n} | {kind}{': ' + why if why else ''} |")
    stale = survivor_classes.stale(counted)
    if stale:
        lines += ["", "Entries of tools/mutation/mutation_survivors.toml without survivors "
                  "(remove them):"]  # fmt: skip
        lines += [f"- `{name}`" for name in stale]
    kinds = ", ".join(f"{excused[kind]} {kind}" for kind in EXCUSED)
    lines += ["", f"## Excused ({sum(excused.values())}: {kinds})", ""]
    lines += ["Each for the reason its entry of tools/mutation/mutation_equivalents.toml gives;",
              "`mutation-report/mutation-merged.md` lists them one by one.", ""]  # fmt: skip
    lines += ["## Reproducing", ""]
    lines += ["`python tools/mutation/mutation.py --report-only --merge` (extra `[mutation]`)",
              f"writes this page from the verdicts kept on the branch `{STATE_BRANCH}`",
              f"(`{STATE_RESULTS}/<leg>/`), and each survivor's diff to",
              "`mutation-report/mutation-merged.md`; it runs no test.", ""]  # fmt: skip
    return "\n".join(lines)


def render(mutants: list[Mutant], stale: list[str], legs: str) -> tuple[str, dict[str, object]]:
    summary = Summary()
    for mutant in mutants:
        summary.add(mutant)
    columns = ("killed", "timeout", "survived", UNREACHED, *EXCUSED)
    lines = [
        f"# Mutation testing of ckptstore by the conformance suite ({legs})",
        "",
        "Kill rate = (killed + timeout) / (all - excused - not run), where equivalent, outside",
        "contract and message text are the excuses of tools/mutation/mutation_equivalents.toml;",
        "a mutant no test reaches ('no tests') counts as a survivor; 'other' counts the mutants",
        "no run has tested yet (not in the rate).",
        "",
        "| module | " + " | ".join(columns) + " | other | kill rate |",
        "|---" * (len(columns) + 3) + "|",
    ]
    payload: dict[str, object] = {"legs": legs, "modules": {}}
    rows = [*sorted(summary.by_module.items()), ("all", summary.total())]
    for module, counts in rows:
        other = sum(counts.values()) - sum(counts[c] for c in columns)
        rate = kill_rate(counts)
        shown = "n/a" if rate is None else f"{rate:.1%}"
        cells = " | ".join(str(counts[c]) for c in columns)
        lines.append(f"| {module} | {cells} | {other} | {shown} |")
        payload["modules"][module] = {**counts, "kill_rate": rate}  # type: ignore[index]
    survivors = [
        m for m in mutants if m.status not in KILLED and m.status != NOT_RUN and not m.excuse
    ]
    excused = [m for m in mutants if m.status not in KILLED and m.excuse]
    lines += ["", f"## Survivors ({len(survivors)})", ""]
    for mutant in survivors:
        lines += [f"### {mutant.name} ({mutant.status})", "", "```diff", mutant.diff, "```", ""]
    lines += [f"## Excused ({len(excused)})", ""]
    lines += [f"- {m.name}: {m.excuse}" for m in excused]
    lines.append("")
    if stale:
        lines += ["## Stale entries in mutation_equivalents.toml", ""]
        lines += [f"- {entry}" for entry in stale]
    payload["survivors"] = [
        {"mutant": m.name, "status": m.status, "diff": m.diff} for m in survivors
    ]
    payload["stale_equivalents"] = stale
    return "\n".join(lines) + "\n", payload


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--modules",
        nargs="+",
        default=["*.py"],
        help="file names (globs) under reference/ckptstore to mutate (default: all)",
    )
    parser.add_argument("--backend", default="local,memory", help="the suite's legs")
    parser.add_argument(
        "--impl",
        default="ckptstore",
        help="the reference's target the suite runs (ckptstore-jobmanager for the "
        "JobManager storage's code)",
    )
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--workdir", type=Path, help="default: .mutation/<legs>")
    parser.add_argument("--output", type=Path, default=ROOT / "mutation-report")
    parser.add_argument(
        "--report-only", action="store_true", help="no run: the report of the last run(s)"
    )
    parser.add_argument(
        "--rerun-survivors",
        action="store_true",
        help="test again the mutants that survived the last run (after tests were added: "
        "mutmut reruns a mutant only when its function changes); excused ones are left out",
    )
    parser.add_argument(
        "--survivors-of",
        type=Path,
        nargs="+",
        metavar="WORKDIR",
        help="run only the mutants (of --modules) that survived in another run's workdir, e.g. "
        "the S3-only survivors of .mutation/local+memory on --backend=moto; those this "
        "workdir judged already are left out, but with --rerun-survivors those it saw "
        "survive run again (never those it killed)",
    )
    parser.add_argument(
        "--diff-matches",
        metavar="REGEX",
        help="with --rerun-survivors or --survivors-of: only the survivors whose name or diff "
        "matches, e.g. 'entropy|token|options' for the S3-only paths worth a slow "
        "moto run",
    )
    parser.add_argument(
        "--clauses",
        metavar="IDS",
        help="with --rerun-survivors or --survivors-of: run only the suite's tests of these "
        "clauses (comma-separated). A survivor of the whole suite can be killed only by a "
        "clause added or changed since, so a rerun after new clauses need not run the rest",
    )
    parser.add_argument(
        "--max-seconds",
        type=float,
        metavar="S",
        help="with --rerun-survivors or --survivors-of: only the mutants whose tests (those that "
        "reach the mutated function) take at most S seconds, by mutmut's estimate: the "
        "survivors a slow leg can afford to run against every test that reaches them",
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="report over every leg configuration run so far (.mutation/* and those the branch "
        f"{STATE_BRANCH} keeps): a mutant killed on any of them is killed; also writes "
        "docs/mutation.md",
    )
    parser.add_argument(
        "--keep-results",
        action="store_true",
        help=f"commit the verdicts of the workdir(s) to the branch {STATE_BRANCH} (results/"
        "<workdir>/, without timings), through a temporary index: the checkout is not touched",
    )
    args = parser.parse_args(argv)
    if importlib.util.find_spec("mutmut") is None:
        raise SystemExit("mutmut is missing (pip install -e '.[mutation]'): a report, too, "
                         "writes the mutants and reads mutmut's results")  # fmt: skip
    legs = workdir_name(args.impl, args.backend)
    workdir = (args.workdir or ROOT / ".mutation" / legs).resolve()
    if args.max_seconds is not None and not (args.rerun_survivors or args.survivors_of):
        parser.error("--max-seconds is for reruns (--rerun-survivors or --survivors-of)")
    if args.clauses and not (args.rerun_survivors or args.survivors_of):
        parser.error("--clauses is for reruns (--rerun-survivors or --survivors-of)")
    if args.rerun_survivors or args.survivors_of:
        prepare(workdir, args.modules, args.backend, args.impl)
        _CLAUSES[:] = [] if not args.clauses else args.clauses.split(",")
        sources = [p.resolve() for p in args.survivors_of or [workdir]]
        for source in sources:
            if source != workdir:
                complete(source)
        modules = {
            _module_of(Path(m).with_suffix("").as_posix()) for m in args.modules if "*" not in m
        }
        chosen = [
            m
            for m in merge([read_results(source) for source in sources])
            if m.status not in KILLED and (not modules or m.module in modules)
        ]
        classify(chosen)  # their diffs, and which are excused: those need no run
        chosen = [m for m in chosen if not m.excuse]
        if args.survivors_of:
            # another run's survivors that this workdir judged already (an earlier session):
            # left out, but for those it saw survive where --rerun-survivors asks for them
            mine = {m.name: m.status for m in read_results(workdir)}
            again = set(KILLED) if args.rerun_survivors else {*KILLED, "survived"}
            chosen = [m for m in chosen if mine.get(m.name, NOT_RUN) not in again]
        if args.diff_matches:
            pattern = re.compile(args.diff_matches)
            chosen = [m for m in chosen if pattern.search(f"{m.name}\n{m.diff}")]
        names = [m.name for m in chosen]
        if args.max_seconds is not None:
            names = cheap_enough(workdir, names, args.max_seconds)
        print(f"{len(names)} mutants to run", flush=True)
        if names:
            before = verdicts(workdir)
            mutmut(workdir, "run", "--max-children", str(args.max_children), *names)
            if _CLAUSES:
                keep_verdicts_of_unreached(workdir, before)
                # a map collected under --clauses knows only those clauses' tests: a later
                # run of the whole suite would take every other function for unreached
                (workdir / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    elif not args.report_only:
        prepare(workdir, args.modules, args.backend, args.impl)
        mutmut(workdir, "run", "--max-children", str(args.max_children))
    workdirs = [workdir]
    if args.merge:
        names = {p.parent.name for p in (ROOT / ".mutation").glob("*/pyproject.toml")}
        names |= set(kept_legs())
        workdirs = [ROOT / ".mutation" / name for name in sorted(names)]
        legs = " | ".join(p.name for p in workdirs)
    for each in workdirs:
        complete(each)
    if args.keep_results:
        commit = keep_results(workdirs)
        kept = "unchanged" if commit is None else f"commit {commit[:12]}"
        print(f"verdicts of {', '.join(w.name for w in workdirs)} on {STATE_BRANCH}: {kept}")
    current = current_hashes()
    runs = []
    for each in workdirs:
        fresh, stale_functions = current_verdicts(each, read_results(each), current)
        runs.append(fresh)
        if stale_functions:
            listed = ", ".join(sorted(stale_functions))
            print(f"left out: {each.name}'s verdicts of {len(stale_functions)} functions "
                  f"changed or removed since it ran ({listed})")  # fmt: skip
    mutants = merge(runs)
    if not mutants:
        raise SystemExit(f"no mutants recorded in {workdir}; run without --report-only first")
    stale = classify(mutants)
    text, payload = render(mutants, stale, legs)
    args.output.mkdir(parents=True, exist_ok=True)
    stem = "mutation-merged" if args.merge else f"mutation-{legs}"
    (args.output / f"{stem}.md").write_text(text, encoding="utf-8")
    (args.output / f"{stem}.json").write_text(
        json.dumps(payload, indent=2) + "\n", encoding="utf-8"
    )
    if args.merge:
        # what a reader of the repository sees: the table and the survivors by class and by
        # function (the diffs stay in mutation-report/, made again from the kept verdicts)
        REPORT.write_text(summary(text, mutants, SurvivorClasses.load()), encoding="utf-8")
        print(f"one-page report: {REPORT.relative_to(ROOT)}")
    overall = payload["modules"]["all"]  # type: ignore[index]
    print(text.split("\n## ")[0])
    print(f"report: {args.output / f'{stem}.md'}")
    return 0 if overall["kill_rate"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())
