"""``Sandbox.existing`` answers as ``Sandbox.exists`` would, URL by URL, on every kind of store:
files, directories (an object store's key prefixes), missing paths, paths outside the root.

On an object store it answers from one listing of the root instead of a request or two per
URL (the stateful machine asks after every step for every file it tracks).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from ckptconform.backends import DEFAULT_BACKENDS, resolve_backend
from ckptconform.backends.base import Backend
from ckptconform.sandbox import Sandbox


@contextlib.contextmanager
def _started(name: str) -> Iterator[Backend]:
    backend = resolve_backend(name)()
    reason = backend.availability()
    if reason is not None:
        pytest.skip(reason)
    try:
        backend.start()
        yield backend
    finally:
        backend.stop()


def _write(sandbox: Sandbox, url: str) -> None:
    path = sandbox.raw_path(url)
    sandbox.backend.raw.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    sandbox.backend.raw.pipe_file(path, b"x")


@pytest.mark.parametrize("name", DEFAULT_BACKENDS)
def test_existing_answers_as_exists_does_for_each_url(name):
    with _started(name) as backend:
        sandbox = Sandbox(backend, target=None)
        elsewhere = Sandbox(backend, target=None)
        try:
            for relative in ("chk-1/a", "chk-1/deep/b", "shared/c"):
                _write(sandbox, f"{sandbox.root}/{relative}")
            _write(elsewhere, f"{elsewhere.root}/d")
            urls = [
                f"{sandbox.root}/chk-1/a",
                f"{sandbox.root}/chk-1/deep/b",
                f"{sandbox.root}/chk-1/deep",  # a directory
                f"{sandbox.root}/chk-1/deep/",
                f"{sandbox.root}/chk-1/gone",
                f"{sandbox.root}/chk-1/a/below-a-file",
                f"{sandbox.root}/chk-2",
                f"{sandbox.root}/shared/c",
                f"{elsewhere.root}/d",  # outside the root: asked on its own
                f"{elsewhere.root}/gone",
            ]
            expected = {url for url in urls if sandbox.exists(url)}
            assert f"{sandbox.root}/chk-1/a" in expected
            assert f"{elsewhere.root}/d" in expected
            assert f"{sandbox.root}/chk-1/gone" not in expected
            assert sandbox.existing(urls) == expected
            assert sandbox.existing([]) == set()
        finally:
            sandbox.cleanup()
            elsewhere.cleanup()
        # a root that is gone: nothing below it exists
        assert sandbox.existing([f"{sandbox.root}/chk-1/a"]) == set()


def test_on_an_object_store_one_listing_answers_every_url_below_the_root():
    with _started("moto") as backend:
        sandbox = Sandbox(backend, target=None)
        try:
            urls = [f"{sandbox.root}/chk-1/file-{i}" for i in range(20)]
            for url in urls[:10]:
                _write(sandbox, url)
            with backend.ledger.record(include_raw=True) as recording:
                assert sandbox.existing(urls) == set(urls[:10])
            assert recording.operations() == {"ListObjectsV2": 1}, recording.summary()
        finally:
            sandbox.cleanup()
