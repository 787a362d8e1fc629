"""Deleting an audit's orphans: only those older than a guard, never anything else.

:func:`plan_deletion` (no I/O) decides per orphan; :func:`delete_planned` deletes. A file is
deleted only when every check holds, and each check that fails is the reason it is kept:

* no completed checkpoint's metadata was unreadable and no reference was unresolved (either
  means the audit does not know every file that is needed: then nothing is deleted);
* no file a checkpoint needs from elsewhere (outside the root, or missing) has the name of an
  orphan: Flink names every state file with a random UUID, so such a namesake is the needed
  file at another place, and the audit's view of the root is wrong (a copied tree audited
  without ``--moved-from``, or with one a level off): then nothing is deleted. A broken
  checkpoint alone blocks nothing: its missing files are gone already, and no orphan is one
  it needs (Flink's CLAIM mode leaves such checkpoints behind; deleting the broken
  checkpoint itself is the operator's decision, never this module's);
* it is no ``_metadata`` (not even one of an in-flight directory: a checkpoint that is being
  finalized writes it last);
* it is not referenced by any completed checkpoint or savepoint under the root;
* its URL, parsed again, lies strictly below the root (no ``..``, no other bucket or scheme);
* its modification time is known and at least the guard ago (a checkpoint being written now
  has young files; the guard must exceed the longest checkpoint, and a shared file that a
  running job may still register again).

The deletion goes through ``ckptstore.stores.operations.delete_file``, which also refuses a
path its client would read as a pattern. An in-flight ``chk-<n>`` or ``savepoint-*``
directory left empty is removed (directory file systems; never recursively).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ckptstore.admin import model
from ckptstore.admin.audit import AuditResult, store_key, url_prefix
from ckptstore.errors import InvalidArgumentError
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.redaction import redact_text
from ckptstore.stores.operations import delete_file, remove_empty_directory

__all__ = [
    "DeletionPlan",
    "DeletionReport",
    "Kept",
    "delete_planned",
    "format_age",
    "parse_duration",
    "plan_deletion",
]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)([smhdw])")


def parse_duration(text: str) -> float:
    """``90s``, ``30m``, ``2h``, ``7d``, ``1w`` (and sums such as ``1d12h``) in seconds;
    anything else is an ``InvalidArgumentError`` (a unit is required: ``7`` means nothing)."""
    spelled = text.strip().lower()
    parts = _DURATION.findall(spelled)
    if not spelled or "".join(n + u for n, u in parts) != spelled:
        raise InvalidArgumentError(
            f"{text!r} is no duration: a number and a unit (s, m, h, d, w), e.g. 2h or 7d"
        )
    return sum(float(n) * _UNITS[u] for n, u in parts)


@dataclass(frozen=True, slots=True)
class Kept:
    url: str
    reason: str


@dataclass(frozen=True, slots=True)
class DeletionPlan:
    older_than: float
    now: float
    delete: tuple[str, ...]
    kept: tuple[Kept, ...]


def plan_deletion(
    result: AuditResult, referenced: Collection[str], older_than: float, now: float
) -> DeletionPlan:
    """Which orphans of ``result`` to delete (module docstring); ``referenced`` holds the
    comparison keys (``store_key``) of every file a completed checkpoint needs."""
    root = parse_storage_path(result.root)
    prefix = url_prefix(root)
    blocked = _blocked(result)
    delete: list[str] = []
    kept: list[Kept] = []
    for orphan in result.orphans:
        reason = blocked or _refusal(orphan.url, orphan.modified, prefix, referenced)
        if reason is None and orphan.modified is not None:
            age = now - orphan.modified
            if age < older_than:
                reason = f"younger than the guard ({format_age(age)} < {format_age(older_than)})"
        if reason is None:
            delete.append(orphan.url)
        else:
            kept.append(Kept(orphan.url, reason))
    return DeletionPlan(older_than, now, tuple(delete), tuple(kept))


def _blocked(result: AuditResult) -> str | None:
    unreadable = [c.relative or "." for c in result.checkpoints if c.status == "unreadable"]
    if unreadable:
        return (
            f"the metadata of {', '.join(unreadable[:3])} could not be read: what it needs is "
            "unknown, so nothing is deleted"
        )
    unresolved = [c.relative or "." for c in result.checkpoints if c.unresolved]
    if unresolved:
        return (
            f"{', '.join(unresolved[:3])} reference paths no store reaches (--moved-from?): "
            "what they need is unknown, so nothing is deleted"
        )
    return _namesake(result)


def _namesake(result: AuditResult) -> str | None:
    """Why nothing may be deleted when a file needed from elsewhere is named like an orphan."""
    orphans = {o.url.rpartition("/")[2]: o.relative for o in result.orphans}
    for checkpoint in result.checkpoints:
        elsewhere = dict.fromkeys(checkpoint.outside, "outside the root")
        elsewhere.update((p.url, "missing") for p in checkpoint.problems if p.found_bytes is None)
        for url, where in sorted(elsewhere.items()):
            relative = orphans.get(url.rpartition("/")[2])
            if relative is not None:
                return (
                    f"{checkpoint.relative or '.'} needs {redact_text(url)} ({where}) and the "
                    f"orphan {relative} bears its name: the root may lie elsewhere than its "
                    "references say (--moved-from?), so nothing is deleted"
                )
    return None


def _refusal(
    url: str, modified: float | None, prefix: str, referenced: Collection[str]
) -> str | None:
    if url.rpartition("/")[2] == model.METADATA:
        return "a _metadata is never deleted"
    if store_key(url) in referenced:
        return "referenced by a completed checkpoint"
    try:
        again = parse_storage_path(url).url
    except Exception:
        return "its path does not parse again"
    if again != url or not url.startswith(prefix) or len(url) <= len(prefix):
        return "not strictly below the root"
    if modified is None:
        return "its age is unknown"
    return None


def format_age(seconds: float) -> str:
    """``90s``, ``12.5m``, ``2.0h``, ``7.3d``: an age or a guard as reports show it."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"


@dataclass(frozen=True, slots=True)
class DeletionReport:
    dry_run: bool
    older_than: float
    #: deleted (or, in a dry run, to be deleted)
    deleted: tuple[str, ...]
    kept: tuple[Kept, ...]
    #: (url, error) of deletions that failed
    failed: tuple[tuple[str, str], ...]
    #: directories (relative) that were intact before and are not after
    broke: tuple[str, ...] = ()


def delete_planned(
    fs: Any, root: StoragePath, plan: DeletionPlan, *, dry_run: bool
) -> DeletionReport:
    """Delete ``plan.delete`` (nothing in a dry run); each path is checked against ``root``
    once more right before its deletion."""
    prefix = url_prefix(root)
    deleted: list[str] = []
    failed: list[tuple[str, str]] = []
    emptied: set[str] = set()
    for url in plan.delete:
        path = parse_storage_path(url)
        if path.url != url or not url.startswith(prefix) or len(url) <= len(prefix):
            failed.append((url, "refused: not strictly below the root"))
            continue
        if dry_run:
            deleted.append(url)
            continue
        try:
            delete_file(fs, path)
        except Exception as exc:
            failed.append((url, f"{type(exc).__name__}: {redact_text(str(exc), limit=300)}"))
            continue
        deleted.append(url)
        directory = model.in_flight_directory(url[len(prefix) :], ())
        if directory is not None:
            emptied.add(directory)
    for directory in sorted(emptied, key=len, reverse=True):
        remove_empty_directory(fs, root.child(directory))
    return DeletionReport(dry_run, plan.older_than, tuple(deleted), plan.kept, tuple(failed))
