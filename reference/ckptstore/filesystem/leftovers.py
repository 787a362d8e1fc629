"""Crash leftovers: finding and removing what a crashed coordinator or task left behind.

A coordinator that dies while it publishes ``_metadata`` on a local disk can leave its staging
file ``._metadata.<32 hex>.inprogress`` in the checkpoint directory; a checkpoint whose
coordinator died before finalizing (or whose abort never ran) leaves its state files in a
``chk-<n>`` directory without ``_metadata``, and an aborted savepoint the same in its
``savepoint-...`` directory. Nothing refers to them, so nothing ever deletes them (P4).

``FileSystemCheckpointStorage.find_leftovers(job_id, older_than=...)`` lists them and
``clean_leftovers(...)`` removes them (``JobManagerCheckpointStorage`` has both too: the
storages' methods are :class:`LeftoverMethods`). The scan
is confined to the storage's own layout (``ckptstore.filesystem.layout``) for one job:

* the job's checkpoint directory (``<base>/<job id>``, or ``<base>`` without
  ``create_subdir``): its ``chk-<n>`` directories only;
* the default savepoint directory: its ``savepoint-<job id[0:6]>-...`` directories only.

In those directories, and nowhere else, a leftover is

* ``metadata-staging``: a ``._metadata.<hex>.inprogress`` file, or on S3 a claim
  ``_metadata.<hex>.inprogress`` of a finalization where the server ignores conditional
  writes (``ckptstore.stores.s3``), left by a coordinator that died while it published;
* ``write-probe`` (S3): a conditional-write probe ``.ckptstore-probe.<32 hex>`` directly in
  the job's checkpoint directory (or the savepoint directory), left by a coordinator that
  died between creating and deleting it (``ckptstore.stores.s3``);
* ``orphaned-state``: a state file (a UUID name, L3) in a directory without ``_metadata``;
* ``open-upload`` (S3): an open multipart upload of a state file in a ``chk-<n>`` or
  ``savepoint-...`` directory (a writer that crashed mid-upload; no listing of objects shows
  it, and nothing can ever complete it), with or without ``_metadata`` there: it is aborted;
* ``abandoned-directory`` (file systems with directories only): a directory without
  ``_metadata`` that holds nothing but such leftovers;

and only when it is older than ``older_than`` (default :data:`DEFAULT_LEFTOVER_GRACE`, one hour:
it must exceed the longest checkpoint, whose state files exist before its ``_metadata``;
Flink's default checkpoint timeout is 10 minutes). Anything whose age is unknown is left alone.
Never listed or removed: ``_metadata`` files, completed checkpoints, ``shared/`` and
``taskowned/`` (their files are referenced from other checkpoints' metadata or owned by tasks,
TO3), files with other names, nested directories, anything outside the layout.

Removal deletes single files (``discard``-style, never recursively) after checking once more
that the directory still has no ``_metadata``, then removes a directory only if it is empty.
On S3, open multipart uploads are found with one ListMultipartUploads per scanned base
directory (a server that does not implement it, such as s3rver, has none to report); the
bucket's ``AbortIncompleteMultipartUpload`` lifecycle rule remains a good second line.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ckptstore.api import METADATA_FILE_NAME, SAVEPOINT_DIR_PREFIX, JobID
from ckptstore.calls import public_call
from ckptstore.filesystem.layout import (
    is_checkpoint_dir_name,
    is_probe_file_name,
    is_savepoint_dir_name,
    is_staging_file_name,
    is_state_file_name,
)
from ckptstore.paths import StoragePath
from ckptstore.stores.adapters import traits_for
from ckptstore.stores.operations import (
    OpenUpload,
    abort_open_upload,
    delete_file,
    file_info,
    list_directory,
    list_open_uploads,
    remove_empty_directory,
)
from ckptstore.stores.registry import filesystem_for, register_path
from ckptstore.validation import require_bool, require_duration

__all__ = [
    "DEFAULT_LEFTOVER_GRACE",
    "LEFTOVER_KINDS",
    "Leftover",
    "LeftoverMethods",
    "clean_leftovers",
    "find_leftovers",
]

#: How old a leftover must be before it is reported or removed.
DEFAULT_LEFTOVER_GRACE = datetime.timedelta(hours=1)
#: The kinds of leftovers, in the order they are removed.
LEFTOVER_KINDS = (
    "metadata-staging",
    "write-probe",
    "orphaned-state",
    "open-upload",
    "abandoned-directory",
)


@dataclass(frozen=True, slots=True)
class Leftover:
    """One crash leftover: what it is, where, how big and how old."""

    url: str
    kind: str
    #: bytes (``None`` for a directory or when unknown)
    size: int | None
    #: last modification (UTC), as the file system reports it
    modified: datetime.datetime
    #: the checkpoint or savepoint directory it belongs to
    directory: str


@dataclass(frozen=True, slots=True)
class _Scope:
    """A directory to scan and which of its subdirectories belong to the layout."""

    base: StoragePath
    accepts: Callable[[str], bool]


def _scopes(
    checkpoints_dir: StoragePath | None, savepoint_dir: StoragePath | None, job_id: JobID
) -> list[_Scope]:
    scopes: list[_Scope] = []
    if checkpoints_dir is not None:
        scopes.append(_Scope(checkpoints_dir, is_checkpoint_dir_name))
    if savepoint_dir is not None:
        prefix = f"{SAVEPOINT_DIR_PREFIX}{str(job_id)[:6]}-"
        scopes.append(
            _Scope(savepoint_dir, lambda n: is_savepoint_dir_name(n) and n.startswith(prefix))
        )
    return scopes


def _modified(info: dict[str, Any]) -> datetime.datetime | None:
    """The modification time an fsspec ``info`` reports (local, memory, S3), in UTC."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        value = info.get(key)
        if isinstance(value, datetime.datetime):
            return value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.datetime.fromtimestamp(float(value), tz=datetime.UTC)
    return None


def _entry_path(base: StoragePath, info: dict[str, Any]) -> StoragePath | None:
    """The child of ``base`` an ``ls`` entry names (``None`` if it is not directly in it)."""
    name = str(info.get("name", "")).rstrip("/").rsplit("/", 1)[-1]
    if not name or name in (".", ".."):
        return None
    return base.child(name)


@dataclass
class _Directory:
    path: StoragePath
    leftovers: list[Leftover]
    has_metadata: bool
    others: int
    modified: datetime.datetime | None
    #: open uploads to abort, by the URL of their leftover
    uploads: dict[str, list[OpenUpload]] = field(default_factory=dict)


def _scan_directory(
    fs: Any, directory: StoragePath, info: dict[str, Any], cutoff: datetime.datetime
) -> _Directory:
    entries = list_directory(fs, directory)
    found: list[Leftover] = []
    state: list[Leftover] = []
    has_metadata = False
    others = 0
    newest = _modified(info)
    for entry in entries:
        path = _entry_path(directory, entry)
        if path is None:
            continue
        modified = _modified(entry)
        if modified is not None and (newest is None or modified > newest):
            newest = modified
        is_file = entry.get("type") == "file"
        if is_file and path.name == METADATA_FILE_NAME:
            has_metadata = True
            continue
        old = modified is not None and modified <= cutoff
        size = entry.get("size")
        size = int(size) if isinstance(size, int) and not isinstance(size, bool) else None
        if is_file and is_staging_file_name(path.name) and old:
            assert modified is not None
            found.append(Leftover(path.url, "metadata-staging", size, modified, directory.url))
        elif is_file and is_state_file_name(path.name) and old:
            assert modified is not None
            state.append(Leftover(path.url, "orphaned-state", size, modified, directory.url))
        else:
            others += 1
    if has_metadata:
        others += len(state)
    else:
        found.extend(state)
    return _Directory(directory, found, has_metadata, others, newest)


def _scan(
    checkpoints_dir: StoragePath | None,
    savepoint_dir: StoragePath | None,
    job_id: JobID,
    token_for: Callable[[StoragePath], str | None],
    older_than: float,
    now: datetime.datetime | None,
) -> list[_Directory]:
    moment = now or datetime.datetime.now(datetime.UTC)
    cutoff = moment - datetime.timedelta(seconds=older_than)
    result: list[_Directory] = []
    for scope in _scopes(checkpoints_dir, savepoint_dir, job_id):
        fs = filesystem_for(scope.base, token_for(scope.base))
        probes = _Directory(scope.base, [], False, 0, None)
        scanned_dirs: dict[str, _Directory] = {}
        for entry in list_directory(fs, scope.base):
            path = _entry_path(scope.base, entry)
            if path is None:
                continue
            if entry.get("type") == "file" and is_probe_file_name(path.name):
                modified = _modified(entry)
                if modified is not None and modified <= cutoff:
                    size = entry.get("size")
                    probes.leftovers.append(
                        Leftover(
                            path.url,
                            "write-probe",
                            size if isinstance(size, int) else None,
                            modified,
                            scope.base.url,
                        )
                    )
                continue
            if entry.get("type") != "directory" or not scope.accepts(path.name):
                continue
            scanned = _scan_directory(fs, path, entry, cutoff)
            if (
                not scanned.has_metadata
                and scanned.others == 0
                and (
                    traits_for(path.scheme).real_directories
                    and scanned.modified is not None
                    and scanned.modified <= cutoff
                )
            ):
                scanned.leftovers.append(
                    Leftover(path.url, "abandoned-directory", None, scanned.modified, path.url)
                )
            scanned_dirs[path.url] = scanned
        _add_open_uploads(fs, scope, cutoff, scanned_dirs)
        if probes.leftovers:
            result.append(probes)
        result.extend(d for d in scanned_dirs.values() if d.leftovers)
    return result


def _add_open_uploads(
    fs: Any, scope: _Scope, cutoff: datetime.datetime, directories: dict[str, _Directory]
) -> None:
    """Open uploads of state files in the scope's layout directories (S3 only)."""
    for upload in list_open_uploads(fs, scope.base) or ():
        directory = upload.path.parent
        started = upload.initiated
        if (
            directory.parent != scope.base
            or not scope.accepts(directory.name)
            or not is_state_file_name(upload.path.name)
            or not isinstance(started, datetime.datetime)
            or not upload.upload_id
        ):
            continue
        started = started if started.tzinfo else started.replace(tzinfo=datetime.UTC)
        if started > cutoff:
            continue
        scanned = directories.setdefault(directory.url, _Directory(directory, [], False, 0, None))
        url = upload.path.url
        if url not in scanned.uploads:
            scanned.leftovers.append(Leftover(url, "open-upload", None, started, directory.url))
        scanned.uploads.setdefault(url, []).append(upload)


def find_leftovers(
    *,
    checkpoints_dir: StoragePath | None,
    savepoint_dir: StoragePath | None,
    job_id: JobID,
    token_for: Callable[[StoragePath], str | None],
    older_than: float,
    now: datetime.datetime | None = None,
) -> list[Leftover]:
    """Every leftover of ``job_id`` in the layout (module docstring), sorted by URL.

    ``older_than`` is in seconds; ``now`` (UTC) is for tests. Costs one listing of each
    scanned directory (on S3: ListObjectsV2 requests) and, on S3, one ListMultipartUploads
    per base directory; nothing else.
    """
    directories = _scan(checkpoints_dir, savepoint_dir, job_id, token_for, older_than, now)
    return sorted((item for d in directories for item in d.leftovers), key=lambda x: x.url)


def clean_leftovers(
    *,
    checkpoints_dir: StoragePath | None,
    savepoint_dir: StoragePath | None,
    job_id: JobID,
    token_for: Callable[[StoragePath], str | None],
    older_than: float,
    now: datetime.datetime | None = None,
    dry_run: bool = False,
) -> list[Leftover]:
    """Remove the leftovers :func:`find_leftovers` reports; return those removed.

    Per directory: if ``_metadata`` appeared since the scan (a checkpoint finalized
    meanwhile), its state files are kept (only staging files go); files are deleted one by
    one, never recursively; open uploads are aborted; an abandoned directory is removed only
    if it is empty by then.
    ``dry_run`` removes nothing and returns what would be removed.
    """
    directories = _scan(checkpoints_dir, savepoint_dir, job_id, token_for, older_than, now)
    removed: list[Leftover] = []
    for directory in directories:
        fs = filesystem_for(directory.path, token_for(directory.path))
        items = list(directory.leftovers)
        has_state = any(item.kind in ("orphaned-state", "abandoned-directory") for item in items)
        if has_state and file_info(fs, directory.path.child(METADATA_FILE_NAME)) is not None:
            items = [item for item in items if item.kind in _ALWAYS_REMOVED]
        for item in _ordered(items):
            if dry_run:
                removed.append(item)
            elif item.kind == "abandoned-directory":
                if remove_empty_directory(fs, directory.path):
                    removed.append(item)
            elif item.kind == "open-upload":
                for upload in directory.uploads.get(item.url, ()):
                    abort_open_upload(fs, upload)
                removed.append(item)
            else:
                delete_file(fs, _child(directory, item))
                removed.append(item)
    return sorted(removed, key=lambda x: x.url)


#: Removed even from a directory whose ``_metadata`` appeared meanwhile (nothing refers to them).
_ALWAYS_REMOVED = frozenset({"metadata-staging", "write-probe", "open-upload"})


def _child(directory: _Directory, item: Leftover) -> StoragePath:
    return directory.path.child(item.url.rstrip("/").rsplit("/", 1)[-1])


def _ordered(items: Iterable[Leftover]) -> list[Leftover]:
    return sorted(items, key=lambda item: LEFTOVER_KINDS.index(item.kind))


class LeftoverMethods:
    """``find_leftovers``/``clean_leftovers`` of a storage, over the directories it names.

    Both storages have them; each says where one job's checkpoints and savepoints go
    (``_leftover_directories``) and holds its fsspec ``_storage_options``.
    """

    _storage_options: dict[str, Any]

    def _leftover_directories(
        self, job_id: JobID
    ) -> tuple[JobID, StoragePath | None, StoragePath | None]:
        """The checked job id, the job's checkpoint directory and the savepoint directory."""
        raise NotImplementedError

    def _leftover_scope(self, job_id: JobID) -> dict[str, Any]:
        job, checkpoints_dir, savepoint_dir = self._leftover_directories(job_id)
        options = self._storage_options
        return {
            "checkpoints_dir": checkpoints_dir,
            "savepoint_dir": savepoint_dir,
            "job_id": job,
            "token_for": lambda path: register_path(path, options),
        }

    @public_call
    def find_leftovers(
        self,
        job_id: JobID,
        *,
        older_than: float | datetime.timedelta = DEFAULT_LEFTOVER_GRACE,
    ) -> list[Leftover]:
        """Crash leftovers of ``job_id`` in this storage's layout (module docstring).

        Staging files of ``_metadata``, and state files in ``chk-<n>`` (and the job's
        ``savepoint-...``) directories without ``_metadata`` (a JobManager storage keeps its
        state inline, so there it finds staging files and abandoned, empty directories), older
        than ``older_than`` (seconds or a ``timedelta``; default one hour, which must exceed
        the longest checkpoint). Lists directories only; deletes nothing.
        """
        seconds = require_duration(older_than, "older_than")
        return find_leftovers(**self._leftover_scope(job_id), older_than=seconds)

    @public_call
    def clean_leftovers(
        self,
        job_id: JobID,
        *,
        older_than: float | datetime.timedelta = DEFAULT_LEFTOVER_GRACE,
        dry_run: bool = False,
    ) -> list[Leftover]:
        """Remove what ``find_leftovers`` reports (single files, then empty directories).

        Returns the leftovers removed (with ``dry_run``: those that would be). State files of
        a directory whose ``_metadata`` appeared meanwhile are kept.
        """
        seconds = require_duration(older_than, "older_than")
        dry = require_bool(dry_run, "dry_run")
        return clean_leftovers(**self._leftover_scope(job_id), older_than=seconds, dry_run=dry)
