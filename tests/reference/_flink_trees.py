"""The checkpoint trees Flink 2.3.0 wrote (``fixtures/flink/*.tar.gz``), unpacked for tests.

Archives made by ``scripts/flink_trees.py`` carry a ``MANIFEST.json``: the root the tree was
written under (Flink's ``_metadata`` names absolute ``file:/`` paths there) and Flink's own
account of every checkpoint and savepoint directory. The older ``hashmap-inline0`` archive has
no manifest. A tree unpacks anywhere: ``relative_path`` maps a URL under the original root, or
under the directory it was unpacked into, to a path relative to the root.
"""

from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

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
