"""The plug-in contract as a type: what ``--impl`` must name, in a form mypy can check.

``ConformanceTarget`` is a ``typing.Protocol``: a target never subclasses or imports anything
of the kit at run time, yet an author who annotates it gets the contract checked::

    from ckptconform import ConformanceTarget

    conformance_target: ConformanceTarget = MyTarget()   # mypy --strict checks MyTarget

The members are read-only (properties in the protocol), so plain class attributes, frozen
dataclass fields and properties all satisfy them. ``schemes``, ``known_failures`` and
``options`` are optional in the duck-typed contract (ARCHITECTURE.md section 4): mypy checks
every protocol member, so a typed target gives them, with ``None`` for "not declared", which
the suite treats exactly like an absent attribute. The suite validates the values at load
time (``ckptconform.target``): capability names, clause ids and option keys come from the
catalog (``ckptconform.clauses``; CONFORMANCE.md lists them).

Only ``ckptstore.api`` is imported, as everywhere in the kit.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Protocol

from ckptstore.api import CheckpointStorage

__all__ = ["ConformanceTarget"]


class ConformanceTarget(Protocol):
    """A checkpoint storage implementation under test, as ``--impl`` names it."""

    @property
    def name(self) -> str:
        """The target's name in the run header, skip reasons and reports."""
        ...

    @property
    def capabilities(self) -> Collection[str]:
        """The optional features it claims (CONFORMANCE.md, "Capabilities").

        A mapping (also a collection of its keys) claims each capability on the schemes its
        value names, ``None`` meaning every scheme: ``{"fast-duplicate": {"s3"},
        "savepoints": None}``. Tests of a capability on another scheme's leg are skipped.
        """
        ...

    @property
    def schemes(self) -> Collection[str] | None:
        """The URL schemes it can store to (``file``, ``s3``, ...); ``None``: every scheme."""
        ...

    @property
    def known_failures(self) -> Mapping[str, str] | None:
        """Clause id -> reason: those clauses run as strict xfail; ``None``: none."""
        ...

    @property
    def options(self) -> Collection[str] | None:
        """The option keys ``make_storage`` accepts (CONFORMANCE.md, "Options").

        The suite passes only these and skips a test that needs another; ``None``: every key
        the suite passes is passed.
        """
        ...

    def make_storage(
        self,
        *,
        checkpoint_dir: str | None,
        savepoint_dir: str | None,
        options: Mapping[str, Any] | None,
    ) -> CheckpointStorage:
        """A fresh storage on the backend under test, configured from ``options``."""
        ...
