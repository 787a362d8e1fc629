"""The checkpoint trees Flink 2.3.0 wrote (``fixtures/flink/*.tar.gz``), unpacked for tests.

Archives made by ``scripts/flink_trees.py`` carry a ``MANIFEST.json``: the root the tree was
written under (Flink's ``_metadata`` names absolute ``file:/`` paths there) and Flink's own
account of every checkpoint and savepoint directory. The older ``hashmap-inline0`` archive has
no manifest. A tree unpacks anywhere: ``relative_path`` maps a URL under the original root, or
under the directory it was unpacked into, to a path relative to the root.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ckptstore.admin.copy import CopyResult, copy_checkpoint
from ckptstore.paths import parse_storage_path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "flink"
ARCHIVES = sorted(FIXTURES.glob("flink-2.3.0-*.tar.gz"))
#: the archives made by scripts/flink_trees.py (with a MANIFEST.json)
MANIFEST_TREES = ("file-merging", "hashmap-unaligned", "rocksdb-incremental")


@dataclass(frozen=True)
class Tree:
    """One unpacked archive."""

    archive: Path
    directory: Path
    manifest: dict[str, Any] | None

    @property
    def name(self) -> str:
        return self.archive.name.removeprefix("flink-2.3.0-").removesuffix(".tar.gz")

    def metadata_dirs(self) -> list[Path]:
        """Every directory holding a ``_metadata``, sorted."""
        return sorted(p.parent for p in self.directory.rglob("_metadata"))

    @property
    def written_at(self) -> str:
        """The root the tree was written under (the manifest's ``root``), for ``--moved-from``."""
        assert self.manifest is not None, f"{self.archive.name} holds no MANIFEST.json"
        return str(self.manifest["root"])

    def url(self, relative: str = "") -> str:
        """The canonical URL of ``relative`` (``""``: the root) in the unpacked tree."""
        return parse_storage_path(
            str(self.directory / relative) if relative else str(self.directory)
        ).url

    def completed(self) -> list[dict[str, Any]]:
        """The manifest's completed checkpoints and savepoints."""
        assert self.manifest is not None
        return [e for e in self.manifest["checkpoints"] if e["state"] == "completed"]

    def latest_intact_checkpoint(self) -> dict[str, Any]:
        """The completed, intact checkpoint (not savepoint) with the highest id."""
        return max(
            (e for e in self.completed() if e["kind"] == "checkpoint" and e["intact"]),
            key=lambda e: e["checkpoint_id"],
        )

    def relative_path(self, url: str) -> str:
        """``url`` (under the original root or the unpacked directory) relative to the root."""
        path = Path(urlparse(url).path)
        bases = [self.directory]
        if self.manifest is not None:
            bases.append(Path(urlparse(self.manifest["root"]).path))
        for base in bases:
            if path.is_relative_to(base):
                return str(path.relative_to(base))
        raise AssertionError(f"{url} lies outside the tree {self.name}")


def copy_targets(tree: Tree) -> list[dict[str, Any]]:
    """What each tree's copies are tested on: its latest intact checkpoint (RocksDB: absolute
    shared files, one job's files in another's directory; file merging: segments) and every
    savepoint (canonical and native)."""
    return [tree.latest_intact_checkpoint()] + [
        e for e in tree.completed() if e["kind"] == "savepoint"
    ]


def copied(tree: Tree, where: Path) -> Tree:
    """A copy of ``tree`` at ``where`` that a test may change (times kept)."""
    shutil.copytree(tree.directory, where, symlinks=True)
    return Tree(tree.archive, where, tree.manifest)


@dataclass(frozen=True)
class Copied:
    """One of :func:`copy_each`'s copies: the manifest's entry, where, what ``copy`` did, and
    the source's bytes of each copied file by its URL in the copy (read before the source
    goes)."""

    entry: dict[str, Any]
    dest: str
    result: CopyResult
    source_bytes: dict[str, bytes]


def copy_each(
    tree: Tree, scratch: Path, dest: Callable[[str], str], **options: Any
) -> list[Copied]:
    """``ckptstore copy`` of each of :func:`copy_targets` from a copy of ``tree`` made in
    ``scratch`` (``--moved-from`` the root it was written under) to ``dest(name)``, a name
    unique per copy; then that copy of the tree is deleted."""
    source = copied(tree, scratch / "source")
    copies = []
    for index, entry in enumerate(copy_targets(tree)):
        target = dest(f"{index}-{entry['path'].rpartition('/')[2]}")
        result = copy_checkpoint(
            str(source.directory / entry["path"]),
            target,
            moved_from=tree.written_at,
            moved_to=str(source.directory),
            **options,
        )
        assert result.checkpoint_id == entry["checkpoint_id"]
        assert sorted(source.relative_path(f.source) for f in result.files) == sorted(
            f["path"] for f in entry["files"]
        )
        data = {
            f.target: (source.directory / source.relative_path(f.source)).read_bytes()
            for f in result.files
        }
        copies.append(Copied(entry, target, result, data))
    shutil.rmtree(source.directory)
    return copies


def unpack(archive: Path, target: Path) -> Tree:
    """``archive`` unpacked into ``target`` (created), with its manifest if it has one."""
    target.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    manifest_file = target / "MANIFEST.json"
    manifest = None
    if manifest_file.is_file():
        manifest = json.loads(manifest_file.read_text())
        manifest_file.unlink()
    return Tree(archive, target, manifest)
