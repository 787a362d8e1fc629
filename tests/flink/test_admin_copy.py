"""``ckptstore copy`` judged by Flink 2.3.0's own loader (needs Java; the Flink leg).

A checkpoint whose ``_metadata`` references files outside its directory (the job's
``shared/`` and ``taskowned/``, another job's ``shared/``, merged segments, channel state at
offsets, a changelog) and relative ones, written with the reference's writer, and the real
Flink tree of the fixture, are copied; then the source is deleted, and
``Checkpoints.loadCheckpointMetadata`` loads the copy's ``_metadata``: every file Flink's
handles name lies in the copy, holds at least the bytes the handles need, and holds the bytes
the source held. Once to another local directory, once to moto's S3: Flink's JVM here has no
S3 file system, and its loader checks that the pointer's ``_metadata`` exists, so it loads the
copy's ``_metadata`` (the bytes on moto) from a local directory, and relative handles are
taken at the copy's place on S3 instead.
Run it with ``CKPTCONFORM_FLINK=1 python -m pytest tests/flink/test_admin_copy.py``.
"""

from __future__ import annotations

import shutil
import tarfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from ckptstore.admin.copy import CopyResult, copy_checkpoint
from ckptstore.flink_metadata import read_metadata
from ckptstore.paths import parse_storage_path
from tests.reference._copy_tree import build_tree
from tests.reference._moto import reset_filesystem_caches, running_moto

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "flink" / "flink-2.3.0-hashmap-inline0.tar.gz"
LOCAL = fsspec.filesystem("file")


def flink_needs(data: bytes, pointer: str, relative_base: str | None = None) -> dict[str, int]:
    """Every file Flink's loader names in ``data`` (loaded at ``pointer``), canonical URL ->
    the bytes its handles need (a segment's end); relative handles at ``relative_base`` when
    given, else where Flink resolved them."""
    from flinktarget import metadata as flink

    needed: dict[str, int] = {}
    for entry in flink.summary(flink.load(data, pointer))["streams"]:
        if entry[0] == "file":
            path, need = entry[1], entry[2]
        elif entry[0] == "relative":
            path = entry[3] if relative_base is None else f"{relative_base}/{entry[1]}"
            need = entry[2]
        elif entry[0] == "segment":
            path, need = entry[1], entry[2] + entry[3]
        else:
            continue
        url = parse_storage_path(path).url
        needed[url] = max(needed.get(url, 0), need)
    return needed


def source_bytes(result: CopyResult, read: Callable[[str], bytes]) -> dict[str, bytes]:
    """The bytes of every copied file's source, by the copy's URL (read before the source goes)."""
    return {f.target: read(f.source) for f in result.files}


def assert_restorable(
    data: bytes,
    pointer: str,
    before: dict[str, bytes],
    read: Callable[[str], bytes],
    copy_at: str | None = None,
) -> int:
    """Flink loads the copy (``data`` at ``pointer``, which is the copy's place unless
    ``copy_at`` is given); each file it names is in the copy with the source's bytes."""
    needed = flink_needs(data, pointer, copy_at)
    destination = parse_storage_path(copy_at or pointer).url
    assert needed
    assert all(url.startswith(destination + "/") for url in needed)
    assert set(needed) == set(before)
    for url, need in needed.items():
        copied = read(url)
        assert len(copied) >= need, url
        assert copied == before[url], url
    return len(needed)


def read_local(url: str) -> bytes:
    return Path(parse_storage_path(url).path).read_bytes()


def test_flink_loads_a_local_copy_after_the_source_is_gone(
    flink_ready: None, tmp_path: Path, fixture_properties: bytes
) -> None:
    tree = build_tree(LOCAL, parse_storage_path(str(tmp_path / "source")).url, fixture_properties)
    dest = tmp_path / "dr" / "chk-5"
    result = copy_checkpoint(tree.pointer, str(dest))
    before = source_bytes(result, read_local)
    shutil.rmtree(tmp_path / "source")
    data = (dest / "_metadata").read_bytes()
    assert assert_restorable(data, dest.as_uri(), before, read_local) == 9
    assert read_metadata(data).checkpoint_id == 5


def test_flink_loads_copies_of_the_real_tree_after_it_is_gone(
    flink_ready: None, tmp_path: Path
) -> None:
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(tmp_path / "flink", filter="data")
    copies = []
    for index, metadata in enumerate(sorted((tmp_path / "flink").rglob("_metadata"))):
        dest = tmp_path / "copies" / f"copy-{index}"
        result = copy_checkpoint(str(metadata), str(dest))
        copies.append((dest, source_bytes(result, read_local)))
    shutil.rmtree(tmp_path / "flink")
    assert len(copies) == 4
    for dest, before in copies:
        data = (dest / "_metadata").read_bytes()
        assert assert_restorable(data, dest.as_uri(), before, read_local) == 2


@pytest.fixture(scope="module")
def moto() -> Iterator[Any]:
    with running_moto() as backend:
        yield backend


def test_flink_loads_a_copy_on_moto_after_the_source_is_gone(
    flink_ready: None, tmp_path: Path, moto: Any, fixture_properties: bytes
) -> None:
    reset_filesystem_caches()
    tree = build_tree(LOCAL, parse_storage_path(str(tmp_path / "source")).url, fixture_properties)
    dest = f"s3://{moto.bucket}/dr-{uuid.uuid4().hex[:12]}/chk-5"
    result = copy_checkpoint(tree.pointer, dest, dest_storage_options=moto.storage_options)
    assert result.server_side == 0
    before = source_bytes(result, read_local)
    shutil.rmtree(tmp_path / "source")

    def read_s3(url: str) -> bytes:
        return bytes(moto.raw.cat_file(parse_storage_path(url).path))

    data = read_s3(dest + "/_metadata")
    loaded_at = tmp_path / "loaded-at"
    loaded_at.mkdir()
    (loaded_at / "_metadata").write_bytes(data)
    assert assert_restorable(data, loaded_at.as_uri(), before, read_s3, dest) == 9
    moto.raw.rm(parse_storage_path(dest).parent.path, recursive=True)


@pytest.fixture(scope="module")
def fixture_properties(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The checkpoint properties Flink 2.3.0 wrote (a retained checkpoint's)."""
    root = tmp_path_factory.mktemp("flink-tree")
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(root, filter="data")
    properties = read_metadata(next(root.rglob("chk-9/_metadata")).read_bytes()).properties
    assert properties is not None
    return properties
