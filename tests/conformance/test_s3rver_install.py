"""s3rver's first install is safe when test workers start the leg at once (needs Node.js, npm
and the npm registry): every worker finds a complete install, none a half-written tree."""

from __future__ import annotations

import multiprocessing
import shutil
from pathlib import Path

import pytest

from ckptconform.backends.s3rver import S3rverBackend, cache_dir


def _install(_: int) -> bool:
    backend = S3rverBackend.__new__(S3rverBackend)
    backend._install()
    return S3rverBackend._script().exists()


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_concurrent_first_installs_each_find_a_complete_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CKPTCONFORM_CACHE", str(tmp_path))
    with multiprocessing.get_context("fork").Pool(3) as pool:
        assert pool.map(_install, range(3)) == [True, True, True]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        cache_dir().name,
        f"{cache_dir().name}.lock",
    ]
