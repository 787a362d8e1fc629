"""``ckptstore inspect``: what a completed checkpoint or savepoint holds, from its ``_metadata``."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from ckptstore.admin.cli import main
from ckptstore.admin.inspect import summarize
from ckptstore.admin.pointer import load_checkpoint
from ckptstore.paths import parse_storage_path
from tests.reference._audit_trees import JOB, OUTSIDE_FILE, SAVEPOINT, build_tree
from tests.reference._fsroot import FsRoot

REPO = Path(__file__).resolve().parents[2]
ARCHIVE = REPO / "fixtures" / "flink" / "flink-2.3.0-hashmap-inline0.tar.gz"
FLINK_JOB = "flinkckpt/28035f78a330f28ba4ff4840f31b71d0"


@pytest.fixture
def flink_tree(tmp_path: Path) -> Path:
    with tarfile.open(ARCHIVE) as archive:
        archive.extractall(tmp_path, filter="data")
    return tmp_path


def test_a_flink_checkpoint_as_json(flink_tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(flink_tree / FLINK_JOB / "chk-12"), "--json"]) == 0
    value = json.loads(capsys.readouterr().out)
    assert (value["checkpoint_id"], value["format_version"]) == (12, 6)
    assert value["snapshot_type"] == "Checkpoint"
    assert value["metadata_bytes"] == 2211
    operators = {op["operator_id"]: op for op in value["operators"]}
    assert len(operators) == 5
    keyed = operators["0da08f51eaa85fc298e176a139b3649a"]
    assert (keyed["name"], keyed["uid"]) == ("KEYED PROCESS, Filter", "counter")
    assert (keyed["parallelism"], keyed["max_parallelism"]) == (2, 128)
    assert keyed["state_kinds"] == {"keyed (full)": 2}
    assert (keyed["subtasks"], keyed["subtasks_with_state"], keyed["files"]) == (2, 2, 2)
    assert value["totals"]["exclusive"] == {"files": 2, "bytes": 3005 + 2979}
    assert {f["category"] for f in value["files"]} == {"exclusive"}


def test_a_flink_savepoint_by_its_metadata_file_as_a_table(
    flink_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pointer = flink_tree / "flinksp" / "savepoint-28035f-1a44b3786f30" / "_metadata"
    assert main(["inspect", str(pointer)]) == 0
    out = capsys.readouterr().out
    assert "checkpoint id 10, format version 6, Savepoint (CANONICAL)" in out
    assert "KEYED PROCESS, Filter / counter" in out
    assert "exclusive       2  3.2 KiB" in out


def test_state_kinds_and_where_files_lie(fsroot: FsRoot) -> None:
    tree = build_tree(fsroot.sub("root"), fsroot.sub("elsewhere"), fsroot.write)
    loaded = load_checkpoint(tree.url(f"{JOB}/chk-2"))
    summary = summarize(loaded.metadata, loaded.directory, metadata_bytes=len(loaded.data))
    where = {f.url.rpartition("/")[2]: f.category for f in summary.files}
    assert where == {
        "sst-a": "shared",
        "sst-b": "shared",
        "sst-x": "outside",
        "private-2": "exclusive",
        "op-2": "exclusive",
    }
    assert summary.totals()["outside"] == {"files": 1, "bytes": OUTSIDE_FILE[1]}
    assert summary.totals()["inline"]["bytes"] == 7
    (operator,) = summary.operators
    assert operator.state_kinds == {"keyed (incremental)": 1, "operator": 1, "inline": 1}
    assert (operator.incremental_shared_files, operator.incremental_private_files) == (3, 1)
    assert (operator.name, operator.uid) == ("counter", "counter-uid")
    loaded = load_checkpoint(tree.url(SAVEPOINT))
    savepoint = summarize(loaded.metadata, loaded.directory)
    assert savepoint.snapshot_type == "Savepoint (CANONICAL)"
    assert [(f.category, f.handles) for f in savepoint.files] == [("exclusive", 2)]


def test_moved_from_reads_a_copy(fsroot: FsRoot, capsys: pytest.CaptureFixture[str]) -> None:
    tree = build_tree(fsroot.sub("root"), fsroot.sub("elsewhere"), fsroot.write)
    copy = fsroot.sub("copy")
    for url in fsroot.files(tree.root):
        fsroot.write(copy + url[len(tree.root) :], fsroot.read(url))
    pointer = f"{copy}/{JOB}/chk-2"
    args = ["inspect", pointer, "--json", "--moved-from", tree.root, "--moved-to", copy]
    assert main(args) == 0
    files = {f["url"]: f["category"] for f in json.loads(capsys.readouterr().out)["files"]}
    canonical = parse_storage_path(copy).url
    assert files[f"{canonical}/{JOB}/shared/sst-a"] == "shared"


def test_bad_pointers_exit_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("ckptstore inspect: CheckpointNotFoundError: No completed checkpoint")
    (tmp_path / "chk-1").mkdir()
    (tmp_path / "chk-1" / "_metadata").write_bytes(b"not metadata at all")
    assert main(["inspect", str(tmp_path / "chk-1")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("ckptstore inspect: MetadataFormatError: ")


def test_a_reader_that_goes_away_gets_no_traceback(flink_tree: Path) -> None:
    import os
    import subprocess
    import sys

    command = [
        sys.executable,
        "-m",
        "ckptstore.admin.cli",
        "inspect",
        str(flink_tree / FLINK_JOB / "chk-12"),
    ]
    child = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ)
    )
    assert child.stdout is not None
    assert child.stderr is not None
    child.stdout.readline()
    child.stdout.close()  # as `| head -1` does
    assert child.stderr.read() == b""
    assert child.wait(timeout=60) in (0, 1)
