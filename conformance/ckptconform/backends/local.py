"""The local file system backend: ``file://`` URLs under a temporary directory."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ckptconform.backends.base import Backend

__all__ = ["LocalBackend"]


class LocalBackend(Backend):
    name = "local"
    scheme = "file"
    object_store = False
    cross_process = True
    shows_unclosed_files = True

    #: Where the temporary directory is made (None: the system's temporary directory).
    parent_dir: str | None = None
    _dir: Path | None = None

    def _start(self) -> None:
        from fsspec.implementations.local import LocalFileSystem

        # the process id in the name tells whose directory a leftover is, after a killed run
        prefix = f"ckptconform-{self.name}-{os.getpid()}-"
        made = tempfile.mkdtemp(prefix=prefix, dir=self.parent_dir)
        self._dir = Path(made).resolve()
        self._fs = LocalFileSystem(skip_instance_cache=True)

    def _stop(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    @property
    def base_url(self) -> str:
        if self._dir is None:
            self.start()
        assert self._dir is not None
        return f"file://{self._dir.as_posix()}"

    def url_of(self, raw_path: str) -> str:
        # Not Path.as_uri(): it percent-encodes, while storages write plain paths into URLs.
        return f"file://{raw_path}"

    def describe(self) -> str:
        where = f" under {self._dir}" if self._dir is not None else ""
        return f"local (file{where})"
