"""The names of Flink's checkpoint layout (L1-L5), and what the storage may therefore delete.

The storage creates exactly these names, so it deletes nothing else:

* a checkpoint's directory ``chk-<n>`` (L1, L2) and a savepoint's directory
  ``savepoint-<job id[0:6]>-<12 random characters>`` (L5): ``dispose_storage_location`` and
  ``dispose_on_failure`` delete such a directory recursively (MD6, MD7), and refuse any other
  directory with ``DisposalRefusedError`` before a single request is sent;
* state files ``<uuid4>`` (L3), the staging files of ``_metadata``
  (``._metadata.<32 hex>.inprogress`` on local disks,
  ``ckptstore.stores.operations.publish_exclusive``; the claims ``_metadata.<32 hex>.inprogress`` on
  S3 servers without conditional writes, ``ckptstore.stores.s3``) and the
  S3 conditional-write probes (``.ckptstore-probe.<32 hex>``, ``ckptstore.stores.s3``, in the
  checkpoint directory): the crash leftover scan (``ckptstore.filesystem.leftovers``) removes only
  such files, and aborts only open multipart uploads of state files in checkpoint and savepoint
  directories;
* task-owned and shared state: only single files, through their handles (H2, TO3).

Why: a pointer may come from a user or a REST call, and a pointer to any file resolves (PTR7,
the metadata file need not be called ``_metadata``). Without this rule, disposing the location
of ``/data/reports/summary.csv`` would delete ``/data/reports`` and every sibling.

This module does no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ckptstore.api import (
    CHECKPOINT_DIR_PREFIX,
    METADATA_FILE_NAME,
    SAVEPOINT_DIR_PREFIX,
)
from ckptstore.errors import DisposalRefusedError
from ckptstore.paths import StoragePath
from ckptstore.redaction import redact_text

__all__ = [
    "CHECKPOINT_DIR_PATTERN",
    "PROBE_FILE_PATTERN",
    "SAVEPOINT_DIR_PATTERN",
    "STAGING_FILE_PATTERN",
    "STATE_FILE_PATTERN",
    "is_checkpoint_dir_name",
    "is_location_dir_name",
    "is_probe_file_name",
    "is_savepoint_dir_name",
    "is_staging_file_name",
    "is_state_file_name",
    "require_disposable",
]

#: ``chk-<n>``: the checkpoint id in decimal (Flink writes no zero padding, L2).
CHECKPOINT_DIR_PATTERN = re.compile(rf"^{CHECKPOINT_DIR_PREFIX}(?P<id>[0-9]{{1,19}})$")
#: ``savepoint-<job id[0:6]>-<12 random characters>`` (L5: Flink draws from ``0-9a-f``).
SAVEPOINT_DIR_PATTERN = re.compile(rf"^{SAVEPOINT_DIR_PREFIX}[0-9a-fA-F]{{6}}-[0-9a-zA-Z]{{12}}$")
#: A state file: a random UUID, 36 characters (L3, S11).
STATE_FILE_PATTERN = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
#: The staging file of a ``_metadata`` publish: ``.``-prefixed on local disks, without the
#: dot for an S3 claim.
STAGING_FILE_PATTERN = re.compile(rf"^\.?{METADATA_FILE_NAME}\.[0-9a-f]{{32}}\.inprogress$")
#: The object of an S3 conditional-write probe (``ckptstore.stores.s3.PROBE_PREFIX``).
PROBE_FILE_PATTERN = re.compile(r"^\.ckptstore-probe\.[0-9a-f]{32}$")


def is_checkpoint_dir_name(name: str) -> bool:
    """True for ``chk-<n>``."""
    return CHECKPOINT_DIR_PATTERN.match(name) is not None


def is_savepoint_dir_name(name: str) -> bool:
    """True for ``savepoint-<6 hex>-<12 characters>``."""
    return SAVEPOINT_DIR_PATTERN.match(name) is not None


def is_location_dir_name(name: str) -> bool:
    """True for the directory of a checkpoint or savepoint (what disposal may delete)."""
    return is_checkpoint_dir_name(name) or is_savepoint_dir_name(name)


def is_state_file_name(name: str) -> bool:
    """True for a state file's name (a UUID)."""
    return STATE_FILE_PATTERN.match(name) is not None


def is_staging_file_name(name: str) -> bool:
    """True for a ``_metadata`` staging file's name (local staging file or S3 claim)."""
    return STAGING_FILE_PATTERN.match(name) is not None


def is_probe_file_name(name: str) -> bool:
    """True for an S3 conditional-write probe's name."""
    return PROBE_FILE_PATTERN.match(name) is not None


#: Per disposal kind: the directory names it may delete, and how a refusal names them.
_DISPOSABLE: dict[str, tuple[Callable[[str], bool], str]] = {
    "checkpoint": (
        is_checkpoint_dir_name,
        f"a checkpoint directory ('{CHECKPOINT_DIR_PREFIX}<n>')",
    ),
    "savepoint": (
        is_savepoint_dir_name,
        f"a savepoint directory ('{SAVEPOINT_DIR_PREFIX}<job>-<suffix>')",
    ),
    "any": (
        is_location_dir_name,
        f"a checkpoint directory ('{CHECKPOINT_DIR_PREFIX}<n>') or a savepoint directory "
        f"('{SAVEPOINT_DIR_PREFIX}<job>-<suffix>')",
    ),
}


def require_disposable(directory: StoragePath, what: str, kind: str = "any") -> None:
    """Raise ``DisposalRefusedError`` unless ``directory`` is a checkpoint or savepoint dir.

    ``what`` names the operation for the message ("dispose_storage_location"); ``kind``
    narrows the accepted names: ``"checkpoint"`` (``chk-<n>`` only), ``"savepoint"``
    (``savepoint-...`` only, e.g. a location from a path reference), ``"any"``.
    """
    accepts, expected = _DISPOSABLE[kind]
    if accepts(directory.name) and directory.parent != directory:
        return
    raise DisposalRefusedError(
        f"{what} refused to delete {redact_text(directory.url)}: it is not {expected} of this "
        "storage's layout, so it may hold files that belong to something else. Nothing was "
        "deleted."
    )
