"""Helpers for the reference's unit tests: a test root with raw access, and a spy file system."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ckptstore.paths import parse_storage_path


@dataclass
class FsRoot:
    """A fresh root on one backend plus raw (non-ckptstore) access to it."""

    name: str
    url: str
    raw: Any

    @property
    def scheme(self) -> str:
        return parse_storage_path(self.url).scheme

    def sub(self, *parts: str) -> str:
        return "/".join([self.url.rstrip("/"), *parts])

    def raw_path(self, url: str) -> str:
        return parse_storage_path(url).path

    def files(self, url: str | None = None) -> list[str]:
        """Sorted canonical URLs of every file below ``url`` (default: the root)."""
        base = parse_storage_path(url or self.url)
        try:
            found = self.raw.find(base.path)
        except FileNotFoundError:
            return []
        return sorted(f"{base.scheme}://{p if p.startswith('/') else '/' + p}" for p in found)

    def exists(self, url: str) -> bool:
        return bool(self.raw.exists(self.raw_path(url)))

    def isdir(self, url: str) -> bool:
        return bool(self.raw.isdir(self.raw_path(url)))

    def read(self, url: str) -> bytes:
        return bytes(self.raw.cat_file(self.raw_path(url)))

    def write(self, url: str, data: bytes) -> None:
        path = parse_storage_path(url)
        self.raw.makedirs(path.parent.path, exist_ok=True)
        self.raw.pipe_file(path.path, data)

    def makedirs(self, url: str) -> None:
        self.raw.makedirs(self.raw_path(url), exist_ok=True)


class SpyFileSystem:
    """Forwards to a real fsspec file system and records each method called on it."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if callable(value) and not name.startswith("__"):

            def recorded(*args: Any, **kwargs: Any) -> Any:
                self.calls.append((name, args))
                return value(*args, **kwargs)

            return recorded
        return value

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]
