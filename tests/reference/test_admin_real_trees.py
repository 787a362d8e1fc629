"""``ckptstore audit``, ``inspect`` and ``copy`` held to Flink's own account of real trees.

The trees of ``fixtures/flink/`` that ``scripts/flink_trees.py`` made from real Flink 2.3.0 jobs
carry a ``MANIFEST.json``: what Flink's own loader found in every checkpoint and savepoint
directory (completed or in flight, each referenced file with the bytes its handles need,
intact or not), the missing files and the orphans. Each tree is unpacked once per module into
a temporary directory and audited there with ``--moved-from`` the root it was written under;
tests that change a tree work on a copy of it. No Java: ``tests/flink/test_admin_real_trees.py``
adds Flink's loader on the same trees.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ckptstore.admin import cleanup
from ckptstore.admin.audit import AuditResult, run_audit
from ckptstore.admin.cli import main
from ckptstore.admin.copy import IncompleteCheckpointError, copy_checkpoint
from ckptstore.errors import InvalidArgumentError
from ckptstore.paths import parse_storage_path
from tests.reference._flink_trees import FIXTURES, MANIFEST_TREES, Tree, copied, copy_each, unpack

DAY = 86400.0


@pytest.fixture(scope="module", params=MANIFEST_TREES)
def made(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Tree:
    """A tree made by scripts/flink_trees.py, unpacked once for this module (never changed)."""
    name = request.param
    return unpack(FIXTURES / f"flink-2.3.0-{name}.tar.gz", tmp_path_factory.mktemp(name) / name)


@pytest.fixture(scope="module")
def rocksdb(tmp_path_factory: pytest.TempPathFactory) -> Tree:
    archive = FIXTURES / "flink-2.3.0-rocksdb-incremental.tar.gz"
    return unpack(archive, tmp_path_factory.mktemp("rocksdb") / "rocksdb-incremental")


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _audit(tree: Tree, relative: str = "") -> AuditResult:
    root = tree.url(relative)
    written = tree.written_at + (f"/{relative}" if relative else "")
    return run_audit(root, moved_from=written).result


def _problems(entry: dict[str, Any]) -> set[tuple[str, str]]:
    """Flink's account of an entry's files that are not there as needed."""
    return {
        (f["path"], "missing" if f["size"] is None else "short")
        for f in entry["files"]
        if f["size"] is None or f["size"] < f["needed_bytes"]
    }


def _orphans(tree: Tree) -> dict[str, int]:
    assert tree.manifest is not None
    return {o["path"]: o["size"] for o in tree.manifest["orphans"]}


def _in_flight(tree: Tree) -> dict[str, list[str]]:
    assert tree.manifest is not None
    return {
        e["path"]: e["files_present"]
        for e in tree.manifest["checkpoints"]
        if e["state"] == "in-flight"
    }


# ------------------------------------------------------------------------------ the audit


def test_the_audit_reports_flinks_truth(made: Tree) -> None:
    result = _audit(made)
    completed = {e["path"]: e for e in made.completed()}
    audits = {c.relative: c for c in result.checkpoints}
    assert set(audits) == set(completed)
    for path, entry in completed.items():
        audit = audits[path]
        assert (audit.kind, audit.checkpoint_id) == (entry["kind"], entry["checkpoint_id"]), path
        assert audit.status == ("intact" if entry["intact"] else "broken"), path
        named = {(made.relative_path(p.url), p.problem) for p in audit.problems}
        assert named == _problems(entry), path
        assert audit.files == len(entry["files"]), path
        assert audit.referenced_bytes == sum(f["needed_bytes"] for f in entry["files"]), path
        assert audit.inline_bytes == entry["inline_bytes"], path
        assert audit.metadata_bytes == entry["metadata_size"], path
        assert audit.unresolved == (), path
        assert audit.outside == (), path
    assert made.manifest is not None
    missing = {made.relative_path(p.url) for c in result.checkpoints for p in c.problems}
    assert missing == set(made.manifest["missing"])
    in_flight = _in_flight(made)
    assert {f.relative: f.files for f in result.in_flight} == {
        path: len(files) for path, files in in_flight.items()
    }
    orphans = _orphans(made)
    assert {o.relative: o.size for o in result.orphans} == orphans
    for orphan in result.orphans:
        directory = orphan.relative.rpartition("/")[0]
        assert (orphan.kind == "in-flight") == (directory in in_flight), orphan.relative
    assert result.files_listed == made.manifest["file_count"]
    assert result.bytes_listed == made.manifest["total_bytes"]


def test_the_exit_code_is_one_exactly_where_flink_found_a_broken_checkpoint(
    made: Tree, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "audit.json"
    args = [str(made.directory), "--moved-from", made.written_at, "--json", str(report)]
    code = main(["audit", *args])
    broken = [e["path"] for e in made.completed() if not e["intact"]]
    assert code == (1 if broken else 0), broken
    value = json.loads(report.read_text())
    assert sorted(c["relative"] for c in value["checkpoints"] if c["status"] != "intact") == sorted(
        broken
    )
    out = capsys.readouterr().out
    intact = len(made.completed()) - len(broken)
    assert f"{intact} of {len(made.completed())} completed checkpoints and savepoints intact" in out


def test_a_deleted_shared_file_breaks_every_checkpoint_that_needs_it(
    rocksdb: Tree, tmp_path: Path
) -> None:
    tree = copied(rocksdb, tmp_path / "tree")
    intact = [e for e in tree.completed() if e["intact"]]
    needs = Counter(f["path"] for e in intact for f in e["files"] if "/shared/" in f["path"])
    victim, count = needs.most_common(1)[0]
    assert count >= 2, "retained checkpoints share a file"
    (tree.directory / victim).unlink()
    result = _audit(tree)
    expected = {e["path"] for e in tree.completed() if not e["intact"]} | {
        e["path"] for e in intact if any(f["path"] == victim for f in e["files"])
    }
    assert {c.relative for c in result.not_intact} == expected
    needed = max(f["needed_bytes"] for e in intact for f in e["files"] if f["path"] == victim)
    for entry in intact:
        if entry["path"] not in expected:
            continue
        (audit,) = [c for c in result.checkpoints if c.relative == entry["path"]]
        assert audit.status == "broken"
        assert [(p.url, p.problem, p.needed_bytes) for p in audit.problems] == [
            (tree.url(victim), "missing", needed)
        ]


def test_a_file_shared_across_jobs_after_a_claim_restore_breaks_both_jobs(
    rocksdb: Tree, tmp_path: Path
) -> None:
    """A file in the first job's ``shared/`` that the job restored in CLAIM mode needs (and the
    first job's checkpoint Flink already broke): every checkpoint of either job that names it
    names it missing."""
    tree = copied(rocksdb, tmp_path / "tree")
    assert tree.manifest is not None
    first, claimed = (j["job_id"] for j in tree.manifest["jobs"])
    needs = {
        job: {f["path"] for e in tree.completed() if e["job_id"] == job for f in e["files"]}
        for job in (first, claimed)
    }
    victim = min(needs[first] & needs[claimed] - set(tree.manifest["missing"]))
    assert victim.startswith(f"checkpoints/{first}/shared/")
    (tree.directory / victim).unlink()
    result = _audit(tree)
    naming = {
        c.relative
        for c in result.checkpoints
        if (tree.url(victim), "missing") in {(p.url, p.problem) for p in c.problems}
    }
    expected = {e["path"] for e in tree.completed() if victim in {f["path"] for f in e["files"]}}
    assert naming == expected
    assert {path.split("/")[1] for path in naming} == {first, claimed}
    assert {c.relative for c in result.not_intact} == expected | {
        e["path"] for e in tree.completed() if not e["intact"]
    }


# ---------------------------------------------------------------------------- deletion


def test_delete_orphans_removes_exactly_flinks_orphans(
    made: Tree, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = copied(made, tmp_path / "tree")
    before = _files(tree.directory)
    report = tmp_path / "deletion.json"
    args = ["--moved-from", tree.written_at, "--json", str(report), "--quiet"]
    code = main(
        ["audit", str(tree.directory), "--delete-orphans", "--older-than=0s", "--yes", *args]
    )
    assert code == (0 if all(e["intact"] for e in tree.completed()) else 1)
    orphans = _orphans(tree)
    assert _files(tree.directory) == before - set(orphans)
    value = json.loads(report.read_text())
    deletion = value["deletion"]
    assert sorted(deletion["deleted"]) == sorted(tree.url(p) for p in orphans)
    assert (deletion["kept"], deletion["failed"], deletion["broke"]) == ([], [], [])
    assert value["orphans"] == []
    statuses = {c["relative"]: c["status"] for c in value["checkpoints"]}
    assert statuses == {e["path"]: "intact" if e["intact"] else "broken" for e in tree.completed()}
    for directory in _in_flight(tree):
        assert not (tree.directory / directory).exists(), "an emptied in-flight directory stays"
    capsys.readouterr()


def test_a_root_mapped_a_level_off_deletes_nothing(rocksdb: Tree, tmp_path: Path) -> None:
    """``--moved-from`` one level off: every shared file looks missing, and its namesake under
    the root looks like an orphan; the deletion refuses."""
    tree = copied(rocksdb, tmp_path / "tree")
    before = _files(tree.directory)
    off = run_audit(tree.url("checkpoints"), moved_from=tree.written_at)
    shared_orphans = [o for o in off.result.orphans if o.kind == "shared"]
    assert len(shared_orphans) > len([p for p in _orphans(tree) if "/shared/" in p])
    plan = cleanup.plan_deletion(off.result, off.referenced, 0.0, time.time() + DAY)
    assert plan.delete == ()
    assert {k.reason for k in plan.kept} == {plan.kept[0].reason}
    assert "--moved-from?" in plan.kept[0].reason
    assert "bears its name" in plan.kept[0].reason
    assert (
        main(
            [
                "audit",
                str(tree.directory / "checkpoints"),
                "--moved-from",
                tree.written_at,
                "--delete-orphans",
                "--older-than=0s",
                "--yes",
                "--quiet",
            ]
        )
        == 1
    )
    assert _files(tree.directory) == before


def test_a_copy_of_a_copy_audited_without_moved_from_deletes_nothing(
    rocksdb: Tree, tmp_path: Path
) -> None:
    """A copy of a checkpoint copied again by hand names the first copy's files, which still
    exist: its own files are orphans that bear the needed files' names; nothing is deleted."""
    entry = rocksdb.latest_intact_checkpoint()
    first = tmp_path / "dr" / "chk"
    copy_checkpoint(
        str(rocksdb.directory / entry["path"]),
        str(first),
        moved_from=rocksdb.written_at,
        moved_to=str(rocksdb.directory),
    )
    second = tmp_path / "dr2" / "chk"
    shutil.copytree(first, second)
    run = run_audit(str(second))
    (audit,) = run.result.checkpoints
    assert audit.status == "intact"
    assert len(audit.outside) > 0
    assert {o.relative.rpartition("/")[2] for o in run.result.orphans} >= {
        u.rpartition("/")[2] for u in audit.outside
    }
    plan = cleanup.plan_deletion(run.result, run.referenced, 0.0, time.time() + DAY)
    assert plan.delete == ()
    assert all("outside the root" in k.reason for k in plan.kept)


def test_the_blind_spot_a_claim_restore_into_another_root(rocksdb: Tree) -> None:
    """Audited alone, the first job's directory shows as orphans the shared files that the job
    restored from it in CLAIM mode still needs: what docs/admin.md warns about."""
    assert rocksdb.manifest is not None
    first, claimed = (j["job_id"] for j in rocksdb.manifest["jobs"])
    needed_by_claimed = {
        f["path"] for e in rocksdb.completed() if e["job_id"] == claimed for f in e["files"]
    }
    needed_by_first = {
        f["path"] for e in rocksdb.completed() if e["job_id"] == first for f in e["files"]
    }
    foreign = {p for p in needed_by_claimed if p.startswith(f"checkpoints/{first}/")}
    foreign -= needed_by_first
    assert foreign, "the claimed job needs files of the first job's that no checkpoint of it does"
    alone = _audit(rocksdb, f"checkpoints/{first}")
    orphans = {f"checkpoints/{first}/{o.relative}" for o in alone.orphans}
    assert foreign <= orphans
    assert not foreign & set(_orphans(rocksdb)), "the whole root sees them referenced"


# ----------------------------------------------------------------------------- inspect


def test_inspect_agrees_with_the_manifest(made: Tree, capsys: pytest.CaptureFixture[str]) -> None:
    for entry in made.completed():
        pointer = str(made.directory / entry["path"])
        moved = ["--moved-from", made.written_at, "--moved-to", str(made.directory)]
        assert main(["inspect", pointer, "--json", *moved]) == 0
        value = json.loads(capsys.readouterr().out)
        assert value["checkpoint_id"] == entry["checkpoint_id"]
        assert value["metadata_bytes"] == entry["metadata_size"]
        assert len(value["operators"]) == entry["operators"]
        assert value["inline_bytes"] == entry["inline_bytes"]
        assert sorted(
            (made.relative_path(f["url"]), f["needed_bytes"]) for f in value["files"]
        ) == (sorted((f["path"], f["needed_bytes"]) for f in entry["files"]))
        totals = value["totals"]
        assert sum(totals[c]["files"] for c in totals) == len(entry["files"])
        assert sum(totals[c]["bytes"] for c in totals if c != "inline") == sum(
            f["needed_bytes"] for f in entry["files"]
        )
        kind = "Checkpoint" if entry["kind"] == "checkpoint" else "Savepoint"
        if entry.get("format"):
            kind += f" ({entry['format'].upper()})"
        assert value["snapshot_type"] == kind, entry["path"]
        job = entry["path"].rpartition("/")[0]
        for f in value["files"]:
            relative = made.relative_path(f["url"])
            if relative.startswith(entry["path"] + "/"):
                assert f["category"] == "exclusive", relative
            elif entry["kind"] == "checkpoint" and relative.startswith(f"{job}/shared/"):
                assert f["category"] == "shared", relative
            elif entry["kind"] == "checkpoint" and relative.startswith(f"{job}/taskowned/"):
                assert f["category"] == "task-owned", relative
            else:
                assert f["category"] == "outside", relative
        assert main(["inspect", pointer, *moved]) == 0
        text = capsys.readouterr().out
        assert f"checkpoint id {entry['checkpoint_id']}, format version 6, {kind}," in text
        assert re.search(rf"^  all +{len(entry['files'])} ", text, re.MULTILINE), text
        for op in value["operators"]:
            incremental = op["state_kinds"].get("keyed (incremental)")
            if incremental:  # the files go with the kind they belong to, whatever follows
                shared, private = op["incremental_shared_files"], op["incremental_private_files"]
                expected = f"keyed (incremental) {incremental} (shared {shared}, private {private})"
                assert expected in text, text


# -------------------------------------------------------------------------------- copy


def test_copies_audit_intact_after_the_source_is_gone(made: Tree, tmp_path: Path) -> None:
    copies = copy_each(made, tmp_path, lambda name: str(tmp_path / "copied" / name))
    for copy in copies:
        audit = run_audit(copy.dest).result
        (checkpoint,) = audit.checkpoints
        assert (checkpoint.status, checkpoint.outside, audit.orphans) == ("intact", (), ())
        assert checkpoint.files == len(copy.entry["files"])
        assert checkpoint.referenced_bytes == sum(f["needed_bytes"] for f in copy.entry["files"])
        for target, content in copy.source_bytes.items():
            assert Path(parse_storage_path(target).path).read_bytes() == content
    assert made.name != "rocksdb-incremental" or any(
        "/shared/" in f["path"] for f in copies[0].entry["files"]
    )
    formats = {c.entry.get("format") for c in copies if c.entry["kind"] == "savepoint"}
    assert (
        formats
        == {
            "rocksdb-incremental": {"canonical", "native"},
            "hashmap-unaligned": {"canonical"},
            "file-merging": {"native"},
        }[made.name]
    )


def test_a_moved_tree_is_copied_only_with_moved_from(
    rocksdb: Tree, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without ``--moved-from`` the copy looks for the shared files where Flink wrote them and
    refuses, naming them; with it the copy takes the files beside the checkpoint."""
    entry = rocksdb.latest_intact_checkpoint()
    pointer = str(rocksdb.directory / entry["path"])
    original = parse_storage_path(rocksdb.written_at).path
    with pytest.raises(IncompleteCheckpointError) as refused:
        copy_checkpoint(pointer, str(tmp_path / "refused"))
    assert refused.value.missing
    assert all(parse_storage_path(u).path.startswith(original + "/") for u in refused.value.missing)
    assert not (tmp_path / "refused").exists()
    with pytest.raises(InvalidArgumentError, match="moved_to goes with moved_from"):
        copy_checkpoint(pointer, str(tmp_path / "x"), moved_to=str(rocksdb.directory))
    dest = tmp_path / "copied"
    moved = ["--moved-from", rocksdb.written_at, "--moved-to", str(rocksdb.directory)]
    assert main(["copy", pointer, str(dest), *moved]) == 0
    assert f"Copied checkpoint {entry['checkpoint_id']} " in capsys.readouterr().out
    assert main(["audit", str(dest), "--quiet"]) == 0
