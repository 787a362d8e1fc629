"""``ckptstore audit --delete-orphans`` and ``ckptstore copy`` on real trees, judged by Flink.

The trees of real Flink 2.3.0 jobs (``fixtures/flink/``, with Flink's account of them in
``MANIFEST.json``), unpacked into temporary directories and read with ``--moved-from`` the root
they were written under. After ``--delete-orphans --older-than=0s --yes`` on a copy of each
tree, Flink 2.3.0's own ``Checkpoints.loadCheckpointMetadata`` (``flinktarget.metadata``) still
loads every retained intact checkpoint and savepoint, and every file its handles name exists
with the bytes they need. Copies (``ckptstore copy``) of each tree's latest intact checkpoint
and of its savepoints, to another directory and to moto's S3, load in Flink's loader once the
source is gone, every file they name lies in the copy with the source's bytes, and
``ckptstore audit`` finds each copy intact (``tests/flink/test_admin_copy.py`` says how a copy
on moto is handed to Flink's JVM, which has no S3 file system).
Run it with ``CKPTCONFORM_FLINK=1 python -m pytest tests/flink/test_admin_real_trees.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ckptstore.admin.audit import run_audit
from ckptstore.admin.cli import main
from ckptstore.paths import parse_storage_path
from tests.flink import test_admin_copy as copy_checks
from tests.reference._flink_trees import FIXTURES, MANIFEST_TREES, Tree, copied, copy_each, unpack
from tests.reference._moto import reset_filesystem_caches, running_moto


@pytest.fixture(scope="module", params=MANIFEST_TREES)
def made(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Tree:
    """A tree made by scripts/flink_trees.py, unpacked once for this module (never changed)."""
    name = request.param
    return unpack(FIXTURES / f"flink-2.3.0-{name}.tar.gz", tmp_path_factory.mktemp(name) / name)


@pytest.fixture(scope="module")
def moto() -> Iterator[Any]:
    with running_moto() as backend:
        yield backend


def _flink_files(tree: Tree, directory: Path) -> dict[str, int]:
    """Every file Flink's loader names in ``directory``'s ``_metadata``, relative to the tree's
    root (absolute paths into the root it was written under mapped onto the tree), with the
    bytes its handles need."""
    from flinktarget import metadata as flink

    data = (directory / "_metadata").read_bytes()
    loaded = flink.load(data, directory.as_uri())
    written = parse_storage_path(tree.written_at).url + "/"
    here = tree.url() + "/"
    needed: dict[str, int] = {}
    for entry in flink.summary(loaded)["streams"]:
        if entry[0] == "file":
            path, need = entry[1], entry[2]
        elif entry[0] == "relative":
            path, need = entry[3], entry[2]
        elif entry[0] == "segment":
            path, need = entry[1], entry[2] + entry[3]
        else:
            continue
        url = parse_storage_path(path).url
        for base in (written, here):
            if url.startswith(base):
                relative = url[len(base) :]
                break
        else:
            raise AssertionError(f"Flink names {url}, outside the tree")
        needed[relative] = max(needed.get(relative, 0), need)
    return needed


def test_flink_loads_every_intact_checkpoint_after_the_orphans_are_deleted(
    flink_ready: None, made: Tree, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = copied(made, tmp_path / "tree")
    args = ["--moved-from", tree.written_at, "--delete-orphans", "--older-than=0s", "--yes"]
    code = main(["audit", str(tree.directory), *args, "--quiet"])
    assert code == (0 if all(e["intact"] for e in tree.completed()) else 1)
    capsys.readouterr()
    assert tree.manifest is not None
    assert not any((tree.directory / o["path"]).exists() for o in tree.manifest["orphans"])
    loaded = 0
    for entry in tree.completed():
        if not entry["intact"]:
            continue
        needed = _flink_files(tree, tree.directory / entry["path"])
        assert needed == {f["path"]: f["needed_bytes"] for f in entry["files"]}, entry["path"]
        for relative, need in needed.items():
            path = tree.directory / relative
            assert path.is_file(), f"{entry['path']} needs {relative}, which is gone"
            assert path.stat().st_size >= need, relative
        loaded += 1
    assert loaded == sum(e["intact"] for e in tree.completed()) > 0


def test_flink_loads_local_copies_after_the_tree_is_gone(
    flink_ready: None, made: Tree, tmp_path: Path
) -> None:
    for copy in copy_each(made, tmp_path, lambda name: str(tmp_path / "copies" / name)):
        dest = Path(copy.dest)
        data = (dest / "_metadata").read_bytes()
        count = copy_checks.assert_restorable(
            data, dest.as_uri(), copy.source_bytes, copy_checks.read_local
        )
        assert count == len(copy.entry["files"]), copy.entry["path"]
        audit = run_audit(copy.dest).result
        assert [c.status for c in audit.checkpoints] == ["intact"]
        assert audit.orphans == ()


def test_flink_loads_copies_on_moto_after_the_tree_is_gone(
    flink_ready: None, made: Tree, tmp_path: Path, moto: Any
) -> None:
    reset_filesystem_caches()
    prefix = f"s3://{moto.bucket}/dr-{uuid.uuid4().hex[:12]}"
    copies = copy_each(
        made,
        tmp_path,
        lambda name: f"{prefix}/{name}",
        dest_storage_options=moto.storage_options,
    )
    assert all(c.result.server_side == 0 for c in copies)

    def read_s3(url: str) -> bytes:
        return bytes(moto.raw.cat_file(parse_storage_path(url).path))

    try:
        for index, copy in enumerate(copies):
            data = read_s3(copy.dest + "/_metadata")
            loaded_at = tmp_path / f"loaded-at-{index}"
            loaded_at.mkdir()
            (loaded_at / "_metadata").write_bytes(data)
            count = copy_checks.assert_restorable(
                data, loaded_at.as_uri(), copy.source_bytes, read_s3, copy.dest
            )
            assert count == len(copy.entry["files"]), copy.entry["path"]
            audit = run_audit(copy.dest, moto.storage_options).result
            assert [c.status for c in audit.checkpoints] == ["intact"]
            assert audit.orphans == ()
    finally:
        moto.raw.rm(parse_storage_path(prefix).path, recursive=True)
