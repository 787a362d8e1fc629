"""Shared fixtures for the reference's unit tests.

``fsroot`` runs a test on the local file system (under ``tmp_path``) and on ``memory://``
(a unique random root per test, removed afterwards). It gives the test a base URL and raw
access that bypasses ``ckptstore`` (plain fsspec), so assertions never trust the code under
test. ``spy_fs`` records every method a file system is asked for, to check that the worker
path sends no directory requests. The helper classes live in ``_fsroot.py`` so test modules
can import them (``from tests.reference._fsroot import FsRoot``).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from ckptstore.paths import parse_storage_path
from ckptstore.stores import registry
from tests.reference._fsroot import FsRoot, SpyFileSystem
from tests.reference._moto import (
    S3Root,
    new_root,
    reset_filesystem_caches,
    reset_process_state,
    running_moto,
)


@pytest.fixture(params=["local", "memory"])
def fsroot(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FsRoot]:
    """A fresh, empty root on the local file system or on memory://."""
    if request.param == "local":
        root = tmp_path / "root"
        root.mkdir()
        yield FsRoot("local", parse_storage_path(str(root)).url, fsspec.filesystem("file"))
        return
    raw = fsspec.filesystem("memory")
    path = f"/ckpt-test-{uuid.uuid4().hex}"
    raw.makedirs(path, exist_ok=True)
    try:
        yield FsRoot("memory", f"memory://{path}", raw)
    finally:
        with contextlib.suppress(FileNotFoundError):
            raw.rm(path, recursive=True)


@pytest.fixture
def memroot() -> Iterator[FsRoot]:
    """A fresh memory:// root only (entropy tests and other object-store-like cases)."""
    raw = fsspec.filesystem("memory")
    path = f"/ckpt-test-{uuid.uuid4().hex}"
    raw.makedirs(path, exist_ok=True)
    try:
        yield FsRoot("memory", f"memory://{path}", raw)
    finally:
        with contextlib.suppress(FileNotFoundError):
            raw.rm(path, recursive=True)


@pytest.fixture
def spy_fs(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``install(scheme)`` makes every registry lookup of ``scheme`` return a spy."""

    def install(scheme: str) -> SpyFileSystem:
        real = registry.get_filesystem
        spy = SpyFileSystem(real(scheme))

        def fake(requested: str, token: str | None = None, **kwargs: Any) -> Any:
            return spy if requested == scheme else real(requested, token, **kwargs)

        for module in (
            "stores.registry",
            "filesystem.handles",
            "filesystem.metadata",
            "filesystem.streams",
            "filesystem.locations",
            "filesystem.access",
            "filesystem.pointers",
            "filesystem.toolset",
        ):
            mod = __import__(f"ckptstore.{module}", fromlist=["get_filesystem"])
            if hasattr(mod, "get_filesystem"):
                monkeypatch.setattr(mod, "get_filesystem", fake)
        return spy

    return install


@pytest.fixture(scope="module")
def moto() -> Iterator[Any]:
    """moto's S3 server on 127.0.0.1 with its request ledger, for one test module."""
    with running_moto() as backend:
        yield backend


@pytest.fixture
def s3(moto: Any) -> Iterator[S3Root]:
    """A fresh random root in the moto bucket, a fresh process state (no client, no probe
    answer: ``reset_process_state``); caches are reset and the root removed after."""
    root = new_root(moto)
    reset_process_state()
    try:
        yield root
    finally:
        reset_filesystem_caches()
        root.cleanup()
