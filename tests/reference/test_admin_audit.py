"""``ckptstore audit``: the truth about a root on local and ``memory://`` roots, and the CLI.

Trees are written by ``tests/reference/_audit_trees.py`` through raw fsspec (never through
the code under test) and by Apache Flink 2.3.0 (``fixtures/flink``). Each test states what
the audit must find: which checkpoints are intact, which files are orphans of which kind,
which file is missing or short, and what a deletion removes (the listings before and after).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tarfile
import time
from pathlib import Path

import pytest

from ckptstore.admin import cleanup
from ckptstore.admin.audit import AuditResult, Orphan, run_audit
from ckptstore.admin.cli import main
from ckptstore.paths import parse_storage_path
from ckptstore.stores.registry import filesystem_for
from tests.reference._audit_trees import (
    COMPLETED,
    FILES,
    JOB,
    ORPHANS,
    OUTSIDE_FILE,
    SAVEPOINT,
    Tree,
    build_tree,
)
from tests.reference._fsroot import FsRoot

REPO = Path(__file__).resolve().parents[2]
ARCHIVE = REPO / "fixtures" / "flink" / "flink-2.3.0-hashmap-inline0.tar.gz"
FLINK_JOB = "flinkckpt/28035f78a330f28ba4ff4840f31b71d0"
FLINK_SAVEPOINT = "flinksp/savepoint-28035f-1a44b3786f30"
DAY = 86400.0


def _tree(fsroot: FsRoot) -> Tree:
    return build_tree(fsroot.sub("root"), fsroot.sub("elsewhere"), fsroot.write)


def _orphans(result: AuditResult) -> dict[str, str]:
    return {o.relative: o.kind for o in result.orphans}


def _status(result: AuditResult) -> dict[str, str]:
    return {c.relative: c.status for c in result.checkpoints}


def test_the_audit_finds_every_checkpoint_intact_and_each_orphan_by_kind(fsroot: FsRoot) -> None:
    tree = _tree(fsroot)
    result = run_audit(tree.root).result
    assert _status(result) == dict.fromkeys(COMPLETED, "intact")
    assert {c.relative: c.checkpoint_id for c in result.checkpoints} == COMPLETED
    assert _orphans(result) == ORPHANS
    totals = result.orphan_totals()
    assert totals["shared"] == {"files": 1, "bytes": 50}
    assert totals["in-flight"] == {"files": 1, "bytes": 40}
    assert [(f.relative, f.job, f.files, f.bytes) for f in result.in_flight] == [
        (f"{JOB}/chk-3", JOB, 1, 40)
    ]
    by_dir = {c.relative: c for c in result.checkpoints}
    chk1, chk2, savepoint = by_dir[f"{JOB}/chk-1"], by_dir[f"{JOB}/chk-2"], by_dir[SAVEPOINT]
    assert (chk1.kind, chk1.job, chk1.files, chk1.referenced_bytes) == ("checkpoint", JOB, 3, 130)
    assert chk1.inline_bytes == 7
    assert chk2.outside == (f"{tree.outside}/{OUTSIDE_FILE[0]}",)
    assert chk2.referenced_bytes == 100 + 200 + 70 + 11 + 21
    assert (savepoint.kind, savepoint.job, savepoint.files) == ("savepoint", None, 1)
    assert result.files_listed == len(FILES) + len(COMPLETED)
    assert result.kind == "tree"


def test_what_the_root_is_is_told_from_its_listing(fsroot: FsRoot) -> None:
    tree = _tree(fsroot)
    assert run_audit(tree.url(JOB)).result.kind == "job"
    assert run_audit(tree.url("savepoints")).result.kind == "savepoints"
    assert run_audit(tree.url(SAVEPOINT)).result.kind == "savepoint"
    assert run_audit(tree.url(f"{JOB}/chk-1")).result.kind == "checkpoint"
    fsroot.write(fsroot.sub("jobs", JOB, "chk-1", "f"), b"1")
    assert run_audit(fsroot.sub("jobs")).result.kind == "jobs"
    job = run_audit(tree.url(JOB)).result
    assert _orphans(job) == {
        k[len(JOB) + 1 :]: v for k, v in ORPHANS.items() if k.startswith(JOB + "/")
    }
    # a file the job's checkpoints need from another part of the same root counts as outside
    assert [c.outside for c in job.checkpoints] == [(), (f"{tree.outside}/{OUTSIDE_FILE[0]}",)]


def test_a_deleted_shared_file_breaks_both_checkpoints_and_is_named(fsroot: FsRoot) -> None:
    tree = _tree(fsroot)
    fsroot.raw.rm_file(fsroot.raw_path(tree.url(f"{JOB}/shared/sst-a")))
    result = run_audit(tree.root).result
    assert _status(result) == {
        f"{JOB}/chk-1": "broken",
        f"{JOB}/chk-2": "broken",
        SAVEPOINT: "intact",
    }
    for checkpoint in result.not_intact:
        assert [(p.url, p.problem, p.needed_bytes) for p in checkpoint.problems] == [
            (tree.url(f"{JOB}/shared/sst-a"), "missing", 100)
        ]


def test_a_short_file_and_a_missing_outside_file_break_their_checkpoint(fsroot: FsRoot) -> None:
    tree = _tree(fsroot)
    fsroot.write(tree.url(f"{JOB}/shared/sst-b"), b"b" * 199)
    fsroot.raw.rm_file(fsroot.raw_path(f"{tree.outside}/{OUTSIDE_FILE[0]}"))
    result = run_audit(tree.root).result
    (broken,) = result.not_intact
    assert broken.relative == f"{JOB}/chk-2"
    assert {(p.url, p.problem, p.found_bytes, p.outside) for p in broken.problems} == {
        (tree.url(f"{JOB}/shared/sst-b"), "short", 199, False),
        (f"{tree.outside}/{OUTSIDE_FILE[0]}", "missing", None, True),
    }


def test_unreadable_metadata_is_reported_for_its_checkpoint_and_blocks_deletion(
    fsroot: FsRoot,
) -> None:
    tree = _tree(fsroot)
    fsroot.write(tree.url(f"{JOB}/chk-1/_metadata"), b"\x49\x60\x67\x2d\x00\x00\x00\x06\x00")
    run = run_audit(tree.root)
    status = _status(run.result)
    assert status[f"{JOB}/chk-1"] == "unreadable"
    assert status[f"{JOB}/chk-2"] == status[SAVEPOINT] == "intact"
    (bad,) = run.result.not_intact
    assert bad.error is not None
    assert bad.error.startswith("MetadataFormatError")
    # what chk-1 alone referenced is now unreferenced, but nothing may be deleted
    assert f"{JOB}/chk-1/private-1" in _orphans(run.result)
    plan = cleanup.plan_deletion(run.result, run.referenced, 0.0, time.time() + DAY)
    assert plan.delete == ()
    assert all("could not be read" in k.reason for k in plan.kept)


def test_moved_from_reads_references_into_the_old_place_below_the_root(fsroot: FsRoot) -> None:
    tree = _tree(fsroot)
    copy = fsroot.sub("copy")
    for url in fsroot.files(tree.root):
        fsroot.write(copy + url[len(tree.root) :], fsroot.read(url))
    fsroot.raw.rm(fsroot.raw_path(tree.root), recursive=True)
    without = run_audit(copy).result
    assert _status(without)[f"{JOB}/chk-1"] == "broken"  # its shared file is gone
    moved = run_audit(copy, moved_from=tree.root).result
    assert _status(moved) == dict.fromkeys(COMPLETED, "intact")
    assert moved.moved_from == parse_storage_path(tree.root).url
    assert _orphans(moved) == ORPHANS
    chk2 = next(c for c in moved.checkpoints if c.relative == f"{JOB}/chk-2")
    assert chk2.outside == (f"{tree.outside}/{OUTSIDE_FILE[0]}",)  # not below the old root


def test_results_are_plain_comparable_values(fsroot: FsRoot) -> None:
    tree = _tree(fsroot)
    first = run_audit(tree.root).result.to_dict()
    second = run_audit(tree.root).result.to_dict()
    assert first.pop("audited_at") <= second.pop("audited_at")
    assert first == second
    assert json.loads(json.dumps(first)) == first


# ------------------------------------------------------------------------------- deletion


def _listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _age_files(root: Path, seconds: float) -> None:
    stamp = time.time() - seconds
    for path in root.rglob("*"):
        os.utime(path, (stamp, stamp))


def _local_tree(tmp_path: Path) -> tuple[Tree, Path]:
    base = tmp_path / "root"

    def put(url: str, data: bytes) -> None:
        path = Path(parse_storage_path(url).path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    url = parse_storage_path(str(tmp_path)).url
    tree = build_tree(f"{url}/root", f"{url}/elsewhere", put)
    return tree, base


def test_delete_orphans_removes_exactly_the_old_orphans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree, base = _local_tree(tmp_path)
    _age_files(base, 3 * DAY)
    young = base / JOB / "taskowned" / "leftover"
    os.utime(young, (time.time() - 60, time.time() - 60))
    before = _listing(base)
    report = tmp_path / "report.json"
    # a dry run deletes nothing and says what it would delete
    assert (
        main(["audit", str(base), "--delete-orphans", "--older-than=1d", "--json", str(report)])
        == 0
    )
    assert _listing(base) == before
    dry = json.loads(report.read_text())["deletion"]
    old = {tree.url(r) for r in ORPHANS if r != f"{JOB}/taskowned/leftover"}
    assert dry["dry_run"] is True
    assert set(dry["deleted"]) == old
    assert [k["url"] for k in dry["kept"]] == [tree.url(f"{JOB}/taskowned/leftover")]
    assert "younger than the guard" in dry["kept"][0]["reason"]
    assert "would delete" in capsys.readouterr().out
    # --yes deletes them, and only them; the re-audit finds everything intact
    code = main(
        ["audit", str(base), "--delete-orphans", "--older-than=1d", "--yes", "--json", str(report)]
    )
    assert code == 0
    assert _listing(base) == before - {r for r in ORPHANS if r != f"{JOB}/taskowned/leftover"}
    assert not (base / JOB / "chk-3").exists()  # the emptied in-flight directory went too
    done = json.loads(report.read_text())
    assert done["deletion"]["dry_run"] is False
    assert set(done["deletion"]["deleted"]) == old
    assert done["deletion"]["broke"] == []
    assert [o["relative"] for o in done["orphans"]] == [f"{JOB}/taskowned/leftover"]
    assert {c["status"] for c in done["checkpoints"]} == {"intact"}


def test_deletion_never_touches_metadata_referenced_files_or_paths_outside_the_root(
    fsroot: FsRoot,
) -> None:
    tree = _tree(fsroot)
    unrelated = f"{tree.outside}/unrelated"
    fsroot.write(unrelated, b"keep me")
    run = run_audit(tree.root)
    root = parse_storage_path(tree.root)
    forged = [
        Orphan(tree.url(f"{JOB}/chk-1/_metadata"), "x", "other", 1, 0.0),
        Orphan(tree.url(f"{JOB}/shared/sst-a"), "x", "shared", 100, 0.0),
        Orphan(unrelated, "x", "other", 7, 0.0),
        Orphan(f"{tree.root}/../elsewhere/unrelated", "x", "other", 7, 0.0),
        Orphan(f"{tree.root}-sibling/file", "x", "other", 1, 0.0),
        Orphan(tree.root, "", "other", 1, 0.0),
    ]
    result = dataclasses.replace(run.result, orphans=tuple(forged))
    plan = cleanup.plan_deletion(result, run.referenced, 0.0, time.time() + DAY)
    assert plan.delete == ()
    reasons = [k.reason for k in plan.kept]
    assert reasons[0] == "a _metadata is never deleted"
    assert reasons[1] == "referenced by a completed checkpoint"
    assert all(r == "not strictly below the root" for r in reasons[2:])
    # even a plan that names them is refused at the deletion itself
    bad = cleanup.DeletionPlan(0.0, time.time(), tuple(o.url for o in forged[2:]), ())
    fs = filesystem_for(root)
    report = cleanup.delete_planned(fs, root, bad, dry_run=False)
    assert report.deleted == ()
    assert len(report.failed) == len(forged) - 2
    assert fsroot.exists(unrelated)


def test_deletion_on_memory_and_local_with_the_planner(fsroot: FsRoot) -> None:
    tree = _tree(fsroot)
    before = set(fsroot.files(tree.root))
    run = run_audit(tree.root)
    root = parse_storage_path(tree.root)
    plan = cleanup.plan_deletion(run.result, run.referenced, DAY, time.time() + 2 * DAY)
    assert {parse_storage_path(u).url for u in plan.delete} == {tree.url(r) for r in ORPHANS}
    report = cleanup.delete_planned(filesystem_for(root), root, plan, dry_run=False)
    assert report.failed == ()
    assert set(fsroot.files(tree.root)) == before - {tree.url(r) for r in ORPHANS}
    again = run_audit(tree.root).result
    assert again.orphans == ()
    assert _status(again) == dict.fromkeys(COMPLETED, "intact")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("30m", 1800), ("2h", 7200), ("7d", 7 * DAY), ("1d12h", 1.5 * DAY)],
)
def test_durations(text: str, seconds: float) -> None:
    assert cleanup.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "7", "2 hours", "h", "-1d", "1d-"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="no duration"):
        cleanup.parse_duration(text)


# ------------------------------------------------------------------------------------ CLI


def test_exit_codes_and_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, base = _local_tree(tmp_path)
    assert main(["audit", str(base), "--quiet"]) == 0
    (base / JOB / "shared" / "sst-a").unlink()
    assert main(["audit", str(base), "--quiet"]) == 1
    capsys.readouterr()
    assert main(["audit", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("ckptstore audit: CheckpointNotFoundError: ")
    for usage in (
        ["audit", str(base), "--delete-orphans"],
        ["audit", str(base), "--older-than=1d"],
        ["audit", str(base), "--delete-orphans", "--older-than=soon"],
        ["audit", str(base), "--storage-option", "novalue"],
        ["audit"],
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(usage)
        assert exit_info.value.code == 2, usage


def test_reports_in_json_and_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree, base = _local_tree(tmp_path)
    (base / JOB / "shared" / "sst-b").write_bytes(b"short")
    json_path, md_path = tmp_path / "audit.json", tmp_path / "audit.md"
    code = main(["audit", str(base), "--json", str(json_path), "--markdown", str(md_path)])
    assert code == 1
    value = json.loads(json_path.read_text())
    assert value["root"] == parse_storage_path(str(base)).url
    assert {c["relative"]: c["status"] for c in value["checkpoints"]}[f"{JOB}/chk-2"] == "broken"
    assert value["orphan_totals"]["task-owned"] == {"files": 1, "bytes": 30}
    assert "invisible to this audit" in value["warning"]
    markdown = md_path.read_text()
    assert "## Not intact" in markdown
    assert f"short {tree.url(f'{JOB}/shared/sst-b')}" in markdown
    assert markdown.count("`" + tree.url("notes.txt") + "`") == 1
    out = capsys.readouterr().out
    assert "not intact:" in out
    assert "2 of 3 completed checkpoints and savepoints intact" in out


# ---------------------------------------------------------------------- Flink's own tree


@pytest.fixture
def flink_tree(tmp_path: Path) -> Path:
    with tarfile.open(ARCHIVE) as archive:
        archive.extractall(tmp_path, filter="data")
    _age_files(tmp_path, 10 * DAY)
    return tmp_path


def test_the_flink_fixture_audits_as_its_readme_says(
    flink_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_audit(str(flink_tree)).result
    assert _status(result) == {
        f"{FLINK_JOB}/chk-9": "intact",
        f"{FLINK_JOB}/chk-11": "intact",
        f"{FLINK_JOB}/chk-12": "intact",
        FLINK_SAVEPOINT: "intact",
    }
    assert {c.relative: c.checkpoint_id for c in result.checkpoints}[FLINK_SAVEPOINT] == 10
    (orphan,) = result.orphans
    assert (orphan.relative.rpartition("/")[0], orphan.kind, orphan.size) == (
        f"{FLINK_JOB}/chk-13",
        "in-flight",
        2979,
    )
    assert run_audit(str(flink_tree / "flinkckpt")).result.kind == "jobs"
    assert run_audit(str(flink_tree / FLINK_JOB)).result.kind == "job"
    assert run_audit(str(flink_tree / "flinksp")).result.kind == "savepoints"
    before = _listing(flink_tree)
    assert main(["audit", str(flink_tree), "--delete-orphans", "--older-than=7d", "--yes"]) == 0
    assert _listing(flink_tree) == before - {f"{FLINK_JOB}/chk-13/{orphan.url.rpartition('/')[2]}"}
    out = capsys.readouterr().out
    assert "4 of 4 completed checkpoints and savepoints intact" in out


def test_a_deleted_state_file_of_the_flink_fixture_breaks_its_checkpoint(flink_tree: Path) -> None:
    victim = next(p for p in (flink_tree / FLINK_JOB / "chk-11").iterdir() if p.name != "_metadata")
    victim.unlink()
    result = run_audit(str(flink_tree)).result
    (broken,) = result.not_intact
    assert broken.relative == f"{FLINK_JOB}/chk-11"
    assert [(p.url, p.problem) for p in broken.problems] == [
        (parse_storage_path(str(victim)).url, "missing")
    ]


def test_progress_is_quiet_on_short_runs_and_plain_lines_when_piped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    from ckptstore.admin import report

    stream = io.StringIO()
    progress = report.LineProgress("ckptstore audit", stream)
    progress.step("listed", 10)
    assert stream.getvalue() == ""  # within QUIET_FOR
    monkeypatch.setattr(report, "QUIET_FOR", 0.0)
    monkeypatch.setattr(report, "PLAIN_EVERY", 0.0)
    progress.step("listed", 20)
    progress.step("read _metadata", 3, 3)
    lines = stream.getvalue().splitlines()
    assert [line.split(" (")[0] for line in lines] == [
        "ckptstore audit: listed 20",
        "ckptstore audit: read _metadata 3/3",
    ]


def test_the_terminal_view_uses_rich_tables_in_a_terminal(
    flink_tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("rich")
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["audit", str(flink_tree), "--quiet"]) == 0  # --quiet: no view
    assert capsys.readouterr().out == ""
    assert main(["audit", str(flink_tree)]) == 0
    out = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert "┃ checkpoint" in out
    assert "flinksp/savepoint-28035f-1a44b3786f30" in out
    assert "4 of 4 completed checkpoints and savepoints intact" in out


def test_ckptstore_copy_is_a_subcommand_and_its_copy_audits_intact(
    flink_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "copied" / "chk-12"
    assert main(["copy", str(flink_tree / FLINK_JOB / "chk-12"), str(dest)]) == 0
    capsys.readouterr()
    result = run_audit(str(dest)).result
    assert (result.kind, _status(result), result.orphans) == ("checkpoint", {"": "intact"}, ())
