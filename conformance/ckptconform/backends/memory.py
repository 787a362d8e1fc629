"""fsspec's in-memory file system: ``memory://`` URLs, visible in this process only."""

from __future__ import annotations

from ckptconform.backends.base import Backend, random_name

__all__ = ["MemoryBackend"]


class MemoryBackend(Backend):
    name = "memory"
    scheme = "memory"
    object_store = False
    cross_process = False

    _base: str | None = None

    def _start(self) -> None:
        import fsspec

        self._fs = fsspec.filesystem("memory")
        self._base = f"memory:///ckptconform-{random_name(8)}"

    def _stop(self) -> None:
        if self._base is not None and self._fs is not None:
            self.remove(self._base)
        self._base = None

    @property
    def base_url(self) -> str:
        if self._base is None:
            self.start()
        assert self._base is not None
        return self._base

    def url_of(self, raw_path: str) -> str:
        return "memory://" + ("" if raw_path.startswith("/") else "/") + raw_path

    def describe(self) -> str:
        return "memory (memory, this process only)"
