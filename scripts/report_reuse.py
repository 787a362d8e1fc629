"""Whether the tests may reuse a suite run's report instead of running the suite again.

``scripts/main.sh`` and ``scripts/jobmanager.sh`` take the tree's fingerprint before their run
and, once it is done, write it beside the report (``tree.json``) with the run's arguments;
``scripts/test.sh`` reuses the report only while the fingerprint is the same and the run is one
the meta-test would have made (no arguments but ``--require-legs``, the ``ci`` hypothesis
profile, the legs it checks selected). The fingerprint covers the contents of every file the
run depends on (the packages, the targets, the fixtures, ``pyproject.toml``, the two scripts;
untracked files too, caches not) and the versions of every installed distribution, so an
uncommitted edit or an upgraded dependency counts as a change.

    report_reuse.py fingerprint
    report_reuse.py stamp DIR FINGERPRINT START_EPOCH [ARGUMENTS...]
    report_reuse.py check DIR TARGET LEGS      # exit 0: reuse (prints why); 1: run (prints why)
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE = ("reference", "conformance", "targets", "fixtures")
FILES = ("pyproject.toml", "scripts/main.sh", "scripts/jobmanager.sh")
SKIPPED_DIRS = {
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    ".mypy_cache",
    ".ruff_cache",
    "build",
}
STAMP = "tree.json"
PROFILE = "ci"  # the meta-test's own run uses it (tests/meta/suite_runner.py)
RUN_NAMES = {"ckptstore": "the main job", "ckptstore-jobmanager": "the JobManager run"}


def _files(root: Path) -> list[Path]:
    """The files a suite run depends on, in a stable order."""
    found = [root / name for name in FILES if (root / name).is_file()]
    for top in TREE:
        for path in (root / top).rglob("*"):
            parts = path.relative_to(root).parts
            if any(p in SKIPPED_DIRS or p.endswith(".egg-info") for p in parts):
                continue
            if path.is_file() and path.suffix != ".pyc":
                found.append(path)
    return sorted(found)


def fingerprint(root: Path = ROOT) -> str:
    """A hash of the run's inputs: file names and contents, Python and the installed versions."""
    digest = hashlib.sha256()
    for path in _files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(sys.version.encode())
    versions = sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions())
    digest.update("\n".join(versions).encode())
    return digest.hexdigest()


def stamp(report_dir: Path, tree: str, started: float, arguments: list[str]) -> bool:
    """Write ``tree.json`` beside a report this run wrote (started after ``started``)."""
    report = report_dir / "conformance.json"
    if not report.is_file() or report.stat().st_mtime < started:
        return False
    header = json.loads(report.read_text(encoding="utf-8"))["header"]
    record = {"fingerprint": tree, "arguments": arguments, "report_started": header["started"]}
    (report_dir / STAMP).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return True


def _when(header: dict[str, object]) -> str:
    started = dt.datetime.fromisoformat(str(header["started"]))
    return started.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def reuse_reason(report_dir: Path, target: str, legs: list[str], tree: str) -> tuple[bool, str]:
    """Whether the report in ``report_dir`` stands for the run the tests would make, and why."""
    name = RUN_NAMES.get(target, f"the {target} run")
    report = report_dir / "conformance.json"
    if not report.is_file():
        return False, f"no report of {name} ({report})"
    header = json.loads(report.read_text(encoding="utf-8"))["header"]
    of = f"{name}'s report of {_when(header)}"
    stamp_path = report_dir / STAMP
    record = json.loads(stamp_path.read_text(encoding="utf-8")) if stamp_path.is_file() else {}
    if record.get("report_started") != header["started"]:
        return False, f"{of} has no record of the tree it ran on"
    if header["target"]["name"] != target:
        return False, f"{of} is of {header['target']['name']}, not {target}"
    extra = [a for a in record["arguments"] if not a.startswith("--require-legs=")]
    if extra:
        return False, f"{of} was a run with {' '.join(extra)}"
    if header["hypothesis_profile"] != PROFILE:
        return False, f"{of} used hypothesis profile {header['hypothesis_profile']}, not {PROFILE}"
    ran = {b["name"] for b in header["backends"] if b["status"] == "selected"}
    if header["spark"]["status"] == "selected":
        ran.add("spark")
    missing = [leg for leg in legs if leg not in ran]
    if missing:
        return False, f"{of} lacks the {', '.join(missing)} leg"
    if record["fingerprint"] != tree:
        return False, f"the tree changed since {of}"
    return True, f"using {of} (same tree)"


def main(argv: list[str]) -> int:
    command, *rest = argv
    if command == "fingerprint":
        print(fingerprint())
        return 0
    if command == "stamp":
        report_dir, tree, started, *arguments = rest
        stamp(Path(report_dir), tree, float(started), arguments)
        return 0
    if command == "check":
        report_dir, target, legs = rest
        reuse, why = reuse_reason(Path(report_dir), target, legs.split(","), fingerprint())
        print(why if reuse else f"the tests run the suite against {target}: {why}")
        return 0 if reuse else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
