"""The per-test sandbox: a fresh random root on a backend, raw inspection helpers, cleanup.

Every test works below ``<backend base>/<16 random chars>``, so tests never collide, reruns are
idempotent, and a shared bucket needs no reset. The raw helpers bypass the implementation
(they use ``backend.raw``), and ``listing()`` prints the tree for failure messages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ckptconform.backends.base import Backend
    from ckptconform.target import Target

__all__ = ["UNCONDITIONAL_METADATA", "Sandbox", "server_options"]

#: The option that lets a storage finalize where the server ignores conditional writes (MD-13).
UNCONDITIONAL_METADATA = "allow_unconditional_metadata"


def server_options(backend: Backend) -> dict[str, Any]:
    """The options every storage on ``backend`` gets for what its server lacks: where it
    ignores conditional writes, ``allow_unconditional_metadata=True`` (the kit opts in, as a
    user of such a server must, to finalize at all)."""
    return {UNCONDITIONAL_METADATA: True} if backend.conditional_writes is False else {}


_UNSET: Any = object()


class Sandbox:
    """A test's private root on the backend under test."""

    def __init__(self, backend: Backend, target: Target, root: str | None = None) -> None:
        self.backend = backend
        self.target = target
        self.root = (root or backend.new_root()).rstrip("/")
        self.checkpoint_dir = self.root + "/checkpoints"
        self.savepoint_dir = self.root + "/savepoints"

    def make_storage(
        self, *, checkpoint_dir: Any = _UNSET, savepoint_dir: Any = _UNSET, **options: Any
    ) -> Any:
        """A fresh storage of the target on this sandbox; ``options`` go into ``options=``.

        Where the backend's server ignores conditional writes the suite opts in with
        ``allow_unconditional_metadata=True`` (a test may pass False); the key reaches only
        targets that take it (:meth:`Target.supports_option`).
        """
        merged: dict[str, Any] = {
            "storage_options": dict(self.backend.storage_options),
            **server_options(self.backend),
            **options,
        }
        if not self.target.supports_option(UNCONDITIONAL_METADATA):
            merged.pop(UNCONDITIONAL_METADATA, None)
        return self.target.make_storage(
            checkpoint_dir=self.checkpoint_dir if checkpoint_dir is _UNSET else checkpoint_dir,
            savepoint_dir=self.savepoint_dir if savepoint_dir is _UNSET else savepoint_dir,
            options=merged,
        )

    # ------------------------------------------------------------------ raw inspection

    def raw_path(self, url: str) -> str:
        """The path of ``url`` for ``backend.raw``."""
        return self.backend.raw_path(url)

    def files(self, url: str | None = None) -> list[str]:
        """Sorted URLs of every file below ``url`` (default: the root), read raw and recursively."""
        path = self.raw_path(url or self.root)
        try:
            found = self.backend.raw.find(path)
        except FileNotFoundError:
            return []
        return sorted(self.backend.url_of(p) for p in found)

    def read(self, url: str) -> bytes:
        """The bytes of a file, read raw."""
        return bytes(self.backend.raw.cat_file(self.raw_path(url)))

    def exists(self, url: str) -> bool:
        """Whether a file or directory exists, asked raw."""
        return bool(self.backend.raw.exists(self.raw_path(url)))

    def existing(self, urls: Iterable[str]) -> set[str]:
        """Those of ``urls`` that exist as a file or directory, asked raw, as :meth:`exists`
        answers. On an object store, where asking costs a request or two per URL, the ones
        below the root come from one recursive listing of it; elsewhere a stat each is cheaper
        than walking every directory."""
        urls = list(urls)
        root = self.raw_path(self.root)
        paths = {url: self.raw_path(url) for url in urls}
        below = set()
        if self.backend.object_store:
            below = {url for url, path in paths.items() if path.startswith(root + "/")}
        listed = self._tree(root) if below else set()
        return {url for url in urls if (paths[url] in listed if url in below else self.exists(url))}

    def _tree(self, path: str) -> set[str]:
        """The raw paths of every file and directory below ``path`` (none when it is missing)."""
        try:
            return {str(p).rstrip("/") for p in self.backend.raw.find(path, withdirs=True)}
        except FileNotFoundError:
            return set()

    def listing(self, url: str | None = None) -> str:
        """A printable tree below ``url`` (default: the root), for failure messages."""
        base = self.raw_path(url or self.root)
        try:
            found = self.backend.raw.find(base, withdirs=True, detail=True)
        except Exception as exc:
            return f"{url or self.root}: cannot list ({type(exc).__name__}: {exc})"
        if not found:
            return f"{url or self.root}: (empty or missing)"
        lines = [f"{url or self.root}:"]
        for path in sorted(found):
            info = found[path]
            relative = path[len(base) :].lstrip("/") or "."
            if info.get("type") == "directory":
                lines.append(f"  {relative}/")
            else:
                lines.append(f"  {relative} ({info.get('size', '?')} bytes)")
        return "\n".join(lines)

    def cleanup(self) -> None:
        """Delete the root and everything below it (missing is fine)."""
        self.backend.remove(self.root)

    def __repr__(self) -> str:
        return f"Sandbox({self.root!r}, backend={self.backend.name!r})"
