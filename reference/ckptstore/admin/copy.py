"""``ckptstore copy POINTER DEST``: a self-contained copy of a completed checkpoint or savepoint.

Why: shared state handles hold absolute paths. A RocksDB incremental checkpoint copied file by
file to another bucket or directory still names the old location for its ``shared/`` files:
the copy looks complete, and restores only while the source exists. This copies every file the
``_metadata`` references and writes a ``_metadata`` whose handles point into the copy (the
layout is ``ckptstore.admin.relocation``'s: the checkpoint's own files keep their relative
place, every other file lies below ``DEST/_external/<scheme>/<bucket or host>/<path>``).

The order makes a half-done copy never look completed:

1. the source's ``_metadata`` is read and resolved (``admin.pointer``, ``admin.references``;
   a tree written elsewhere through ``moved_from``); a path no store reaches refuses the copy
   (``RelocationError``);
2. ``DEST`` must not exist or be empty (:class:`DestinationNotEmptyError`);
3. every source file is looked up (one HEAD each on S3): a missing file or one shorter than
   its handles need refuses the copy before anything is written
   (:class:`IncompleteCheckpointError`, naming them);
4. on S3 the destination's conditional writes are probed (inside ``DEST``), so a server that
   cannot publish ``_metadata`` exclusively refuses before the files are copied;
5. the files are copied, ``workers`` at a time: within one store server-side
   (``stores.operations.copy_exclusive``: S3 CopyObject, a hard link on a local disk (the
   files are immutable), memory's copy), across stores streamed through this process in
   chunks (exclusive creates, sizes checked against the lookup);
6. the rewritten ``_metadata`` is published last and exclusively
   (``stores.operations.publish_exclusive``).

A failure in 5 or 6 raises :class:`CopyFailedError`, which lists what was copied; no
``_metadata`` is written, and nothing is deleted (``DEST`` holds only what this call wrote
there: remove it, or copy again to a new place). Files of the source directory that the
metadata does not reference are not copied.

The console subcommand: :func:`add_arguments` and :func:`run` (exit 0 copied, 1 failed,
2 usage error).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from typing import Any

from ckptstore.admin.arguments import parse_storage_options
from ckptstore.admin.pointer import LoadedCheckpoint, filesystem_of, load_checkpoint
from ckptstore.admin.references import MovedTree, checkpoint_references
from ckptstore.admin.relocation import (
    EXTERNAL_DIRECTORY,
    Placement,
    RelocationError,
    place_files,
    relocate_metadata,
)
from ckptstore.api import METADATA_FILE_NAME
from ckptstore.errors import (
    CheckpointFileExistsError,
    CheckpointIOError,
    CheckpointNotFoundError,
    CheckpointStorageError,
    ConditionalWritesUnsupportedError,
    InvalidArgumentError,
    InvalidPointerError,
    UnsupportedSchemeError,
)
from ckptstore.flink_metadata import MetadataFormatError, read_metadata, write_metadata
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.redaction import redact_text
from ckptstore.stores import s3
from ckptstore.stores.adapters import traits_for
from ckptstore.stores.operations import (
    conditional_write_mode,
    copy_exclusive,
    delete_file,
    discard_writer,
    file_info,
    list_directory,
    make_directories,
    open_exclusive_write,
    open_for_read,
    probe_conditional_writes,
    publish_exclusive,
    sync_and_close,
)
from ckptstore.stores.protocol import family_of
from ckptstore.validation import require_int, require_storage_options, require_url_text

__all__ = [
    "CopiedFile",
    "CopyFailedError",
    "CopyResult",
    "DestinationNotEmptyError",
    "IncompleteCheckpointError",
    "add_arguments",
    "copy_checkpoint",
    "main",
    "parse_storage_options",
    "run",
]

#: Bytes read and written at a time when a file is streamed from one store to another.
CHUNK_BYTES = 8 * 1024 * 1024
#: Files copied at once by default (requests in flight on object stores).
DEFAULT_WORKERS = 8
#: How many names an error message lists before it says how many more there are.
_NAMES_SHOWN = 10


class DestinationNotEmptyError(CheckpointFileExistsError):
    """``DEST`` exists and is a file or a directory that holds something; nothing was copied."""


class IncompleteCheckpointError(CheckpointNotFoundError):
    """Files the source's ``_metadata`` needs are missing or shorter than its handles need:
    the source would not restore, so no copy was made. ``missing`` lists the absent files'
    URLs, ``short`` the short ones as (URL, size, bytes needed)."""

    def __init__(
        self, message: str, missing: Sequence[str], short: Sequence[tuple[str, int, int]]
    ) -> None:
        super().__init__(message)
        self.missing = tuple(missing)
        self.short = tuple(short)


class CopyFailedError(CheckpointIOError):
    """A copy failed after it started writing to ``DEST``; no ``_metadata`` was written there.

    ``copied`` holds the files that were copied (their URLs in ``DEST``), ``failed`` the source
    URL whose copy failed (``None`` when the ``_metadata`` publish or a directory failed);
    the failure is the ``__cause__``.
    """

    def __init__(self, message: str, copied: Sequence[str], failed: str | None) -> None:
        super().__init__(message)
        self.copied = tuple(copied)
        self.failed = failed


@dataclass(frozen=True, slots=True)
class CopiedFile:
    """One file copied: source and target URLs, bytes, and whether the store copied it."""

    source: str
    target: str
    size: int
    server_side: bool


@dataclass(frozen=True, slots=True)
class CopyResult:
    """What :func:`copy_checkpoint` did."""

    checkpoint_id: int
    #: the source checkpoint's directory
    source: str
    #: the copy's directory
    destination: str
    #: the copy's ``_metadata``
    metadata: str
    #: every file copied, sorted by target
    files: tuple[CopiedFile, ...]

    @property
    def copied_bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def server_side(self) -> int:
        return sum(1 for f in self.files if f.server_side)

    def to_json(self) -> dict[str, Any]:
        """Plain values for ``--json``."""
        return {
            **asdict(self),
            "files": [asdict(f) for f in self.files],
            "copied_bytes": self.copied_bytes,
            "server_side": self.server_side,
            "streamed": len(self.files) - self.server_side,
        }


def copy_checkpoint(
    pointer: str,
    dest: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    dest_storage_options: Mapping[str, Any] | None = None,
    workers: int = DEFAULT_WORKERS,
    on_copied: Callable[[CopiedFile], None] | None = None,
    moved_from: str | None = None,
    moved_to: str | None = None,
) -> CopyResult:
    """Copy the checkpoint or savepoint ``pointer`` names to ``dest`` (module docstring).

    ``storage_options``: fsspec options of the source's stores (and of ``dest``'s unless
    ``dest_storage_options`` is given); ``file`` and ``memory`` take none. ``on_copied`` is
    called from the worker thread after each file (progress); an exception it raises fails
    the copy like a failed file. ``moved_from``: the checkpoint lies in a tree written at
    that URL and now at ``moved_to`` (default: the checkpoint's directory), e.g. a bucket
    copied for disaster recovery: its absolute paths into ``moved_from`` are read there
    (``admin.references.MovedTree``), so the copy takes the files beside it, not the
    original's.

    Raises ``InvalidPointerError``/``CheckpointNotFoundError``/``MetadataFormatError`` for a
    pointer that names no readable ``_metadata``, ``RelocationError`` for a checkpoint that
    cannot be laid out in a copy, :class:`DestinationNotEmptyError`,
    :class:`IncompleteCheckpointError`, ``ConditionalWritesUnsupportedError`` (S3 servers that
    cannot create ``_metadata`` exclusively), :class:`CopyFailedError`; argument errors as
    ``ckptstore.validation`` raises them.
    """
    pointer = require_url_text(pointer, "pointer")
    dest_path = parse_storage_path(require_url_text(dest, "dest"))
    source_options = require_storage_options(storage_options)
    target_options = (
        source_options
        if dest_storage_options is None
        else require_storage_options(dest_storage_options, "dest_storage_options")
    )
    workers = require_int(workers, "workers", minimum=1, maximum=256)

    if moved_to is not None and moved_from is None:
        raise InvalidArgumentError("moved_to goes with moved_from")
    loaded = load_checkpoint(pointer, source_options)
    moved = None
    if moved_from is not None:
        target = loaded.directory
        if moved_to is not None:
            target = parse_storage_path(require_url_text(moved_to, "moved_to"))
        moved = MovedTree(parse_storage_path(require_url_text(moved_from, "moved_from")), target)
    references = checkpoint_references(loaded.metadata, loaded.directory, moved)
    placements = place_files(references, dest_path)
    new_metadata = _relocated_bytes(loaded, dest_path, placements, moved)

    dest_fs = filesystem_of(dest_path, target_options)
    _require_empty(dest_fs, dest_path)
    copier = _Copier(dest_fs, source_options, on_copied)
    sizes = copier.look_up(placements, workers)
    _require_exclusive_publish(dest_fs, dest_path)
    files = copier.copy_all(placements, sizes, dest_path, workers)
    metadata_path = dest_path.child(METADATA_FILE_NAME)
    try:
        publish_exclusive(dest_fs, metadata_path, new_metadata, probe_dir=dest_path)
    except Exception as exc:
        raise _failure(dest_path, [f.target for f in files], None, exc, len(files)) from exc
    return CopyResult(
        checkpoint_id=loaded.metadata.checkpoint_id,
        source=loaded.directory.url,
        destination=dest_path.url,
        metadata=metadata_path.url,
        files=tuple(sorted(files, key=lambda f: f.target)),
    )


def _relocated_bytes(
    loaded: LoadedCheckpoint,
    dest: StoragePath,
    placements: Sequence[Placement],
    moved: MovedTree | None,
) -> bytes:
    """The copy's ``_metadata``; checked to name exactly the placed files, all below ``dest``."""
    data = write_metadata(relocate_metadata(loaded.metadata, loaded.directory, dest, moved))
    named = checkpoint_references(read_metadata(data), dest)
    expected = {p.target.url for p in placements}
    if named.unresolved or {f.url for f in named.files} != expected:
        raise RelocationError(
            f"The rewritten metadata of {loaded.directory.url} does not name exactly the files "
            f"placed in {dest.url}: a handle kind whose paths the copy does not move"
        )
    return data


def _require_empty(fs: Any, dest: StoragePath) -> None:
    """Refuse a ``dest`` that is a file or holds anything (one listing on object stores)."""
    entries = list_directory(fs, dest)
    if not entries:
        return
    if len(entries) == 1 and entries[0].get("type") == "file":
        name = str(entries[0].get("name", "")).rstrip("/")
        if name == dest.fs_path.rstrip("/"):
            raise DestinationNotEmptyError(
                f"The copy's destination {dest.shown} is a file; name a directory that does "
                "not exist or is empty. Nothing was copied."
            )
    raise DestinationNotEmptyError(
        f"The copy's destination {dest.shown} is not empty ({len(entries)} entries, e.g. "
        f"{redact_text(str(entries[0].get('name', '')))}); name a directory that does not "
        "exist or is empty. Nothing was copied."
    )


def _require_exclusive_publish(fs: Any, dest: StoragePath) -> None:
    """Where ``_metadata`` could not be published exclusively at ``dest``, refuse now."""
    probe_conditional_writes(fs, dest)
    if conditional_write_mode(fs, dest) == s3.CONDITIONAL_WRITES_REFUSED:
        raise ConditionalWritesUnsupportedError(
            f"The S3 server of {dest.shown} ignores conditional writes, so the copy's "
            "_metadata cannot be created exclusively; nothing was copied. Use a server with "
            "conditional writes, or set the storage option allow_unconditional_metadata=True."
        )


class _Copier:
    """The lookups and copies of one call: the file systems by store, what was copied."""

    def __init__(
        self,
        dest_fs: Any,
        source_options: Mapping[str, Any],
        on_copied: Callable[[CopiedFile], None] | None,
    ) -> None:
        self._dest_fs = dest_fs
        self._options = source_options
        self._on_copied = on_copied
        self._lock = threading.Lock()
        self._systems: dict[tuple[str, str | None], Any] = {}

    def _fs(self, path: StoragePath) -> Any:
        key = (path.scheme, path.path.split("/", 1)[0] if path.has_authority else None)
        with self._lock:
            fs = self._systems.get(key)
        if fs is None:
            fs = filesystem_of(path, self._options)
            with self._lock:
                fs = self._systems.setdefault(key, fs)
        return fs

    def look_up(self, placements: Sequence[Placement], workers: int) -> dict[str, int]:
        """The size of every source file; raises :class:`IncompleteCheckpointError` naming
        the missing and the short ones."""

        def size_of(placement: Placement) -> int | None:
            source = parse_storage_path(placement.source)
            info = file_info(self._fs(source), source)
            return None if info is None or info.get("type") != "file" else int(info["size"])

        with ThreadPoolExecutor(max_workers=workers) as pool:
            sizes = dict(
                zip((p.source for p in placements), pool.map(size_of, placements), strict=True)
            )
        missing = sorted(url for url, size in sizes.items() if size is None)
        short = sorted(
            (p.source, size, p.needed_bytes)
            for p in placements
            if (size := sizes[p.source]) is not None and size < p.needed_bytes
        )
        if missing or short:
            described = [f"missing: {redact_text(url)}" for url in missing] + [
                f"short: {redact_text(url)} holds {size} bytes, its handles need {needed}"
                for url, size, needed in short
            ]
            raise IncompleteCheckpointError(
                f"The checkpoint cannot be copied: {len(missing)} file(s) it references are "
                f"missing and {len(short)} shorter than its handles need "
                f"({_listed(described)}). Nothing was copied.",
                missing,
                short,
            )
        return {url: size for url, size in sizes.items() if size is not None}

    def copy_all(
        self,
        placements: Sequence[Placement],
        sizes: Mapping[str, int],
        dest: StoragePath,
        workers: int,
    ) -> list[CopiedFile]:
        """Copy every file, ``workers`` at a time; :class:`CopyFailedError` on the first
        failure (the copies under way finish, the others are not started)."""
        copied: list[CopiedFile] = []
        try:
            make_directories(self._dest_fs, dest)
            for parent in sorted({p.target.parent.url for p in placements}):
                make_directories(self._dest_fs, parse_storage_path(parent))
        except Exception as exc:
            raise _failure(dest, [], None, exc, len(placements)) from exc
        failure: tuple[Placement, BaseException] | None = None
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(self._copy_and_tell, p, sizes[p.source]): p for p in placements}
            for future in as_completed(futures):
                if future.cancelled():
                    continue
                error = future.exception()
                if error is None:
                    done, error = future.result()
                    copied.append(done)
                if error is not None and failure is None:
                    failure = (futures[future], error)
                    for pending in futures:
                        pending.cancel()
        if failure is not None:
            placement, error = failure
            raise _failure(
                dest, [f.target for f in copied], placement.source, error, len(placements)
            ) from error
        return copied

    def _copy_and_tell(
        self, placement: Placement, size: int
    ) -> tuple[CopiedFile, Exception | None]:
        """``_copy``, then ``on_copied`` (in this worker thread); what the callback raised
        fails the copy, the file counting as copied."""
        done = self._copy(placement, size)
        if self._on_copied is not None:
            try:
                self._on_copied(done)
            except Exception as exc:
                return done, exc
        return done, None

    def _copy(self, placement: Placement, size: int) -> CopiedFile:
        source = parse_storage_path(placement.source)
        target = placement.target
        source_fs = self._fs(source)
        server_side = (
            source_fs is self._dest_fs
            and family_of(source.scheme) == family_of(target.scheme)
            and traits_for(source.scheme).server_side_copy
        )
        if server_side:
            copy_exclusive(source_fs, source, target, size)
        else:
            _stream(source_fs, source, self._dest_fs, target, size)
        return CopiedFile(placement.source, target.url, size, server_side)


def _stream(
    source_fs: Any, source: StoragePath, dest_fs: Any, target: StoragePath, size: int
) -> None:
    """Copy through this process: an exclusive create, the bytes in chunks (the source must
    still hold ``size`` bytes), committed at close. A failure leaves no target: the writer is
    discarded, and the file this call created is deleted (on directory file systems the
    exclusive create made it; on object stores only a failed commit may have), never
    another writer's (an exclusive commit that found one)."""
    writer = open_exclusive_write(dest_fs, target)
    created = not traits_for(target.scheme).object_store
    try:
        with open_for_read(source_fs, source, size) as reader:
            while chunk := reader.read(CHUNK_BYTES):
                writer.write(chunk)
        created = True
        sync_and_close(writer, target)
    except BaseException as exc:
        discard_writer(writer)
        if created and not isinstance(exc, FileExistsError):
            with contextlib.suppress(Exception):
                delete_file(dest_fs, target)
        raise


def _listed(names: Sequence[str]) -> str:
    shown = "; ".join(names[:_NAMES_SHOWN])
    more = len(names) - _NAMES_SHOWN
    return f"{shown}; and {more} more" if more > 0 else shown


def _failure(
    dest: StoragePath, copied: Sequence[str], failed: str | None, error: BaseException, total: int
) -> CopyFailedError:
    where = f"copying {redact_text(failed)}" if failed else "creating its directories or _metadata"
    listed = f": {_listed([redact_text(url) for url in sorted(copied)])}" if copied else ""
    return CopyFailedError(
        f"The copy to {dest.shown} failed {where}: {type(error).__name__}: "
        f"{redact_text(str(error), limit=300)}. {len(copied)} of {total} files were copied"
        f"{listed}. No {METADATA_FILE_NAME} was written, so {dest.shown} is no completed "
        "checkpoint; nothing was deleted: remove it, or copy again to a new place.",
        sorted(copied),
        failed,
    )


# --------------------------------------------------------------------------- the subcommand


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``ckptstore copy``."""
    parser.description = (
        "Copy a completed checkpoint or savepoint with every file its _metadata references to "
        "DEST, and write a _metadata there whose handles point into the copy. The "
        "checkpoint's own files keep their relative place; files from elsewhere (shared/, "
        f"taskowned/, other jobs) go below DEST/{EXTERNAL_DIRECTORY}/<scheme>/<bucket>/<path>."
        " _metadata is written last: a failed copy is never a completed checkpoint."
    )
    parser.add_argument("pointer", help="the checkpoint's directory or its _metadata (any scheme)")
    parser.add_argument("dest", help="a directory that does not exist or is empty")
    parser.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="fsspec option of the stores (repeatable), e.g. endpoint_url=http://127.0.0.1:9000",
    )
    parser.add_argument(
        "--dest-storage-option",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="option of DEST's store only (repeatable); default: the --storage-option ones",
    )
    parser.add_argument(
        "--workers", type=int, default=DEFAULT_WORKERS, help="files copied at once (default 8)"
    )
    parser.add_argument(
        "--moved-from",
        metavar="URL",
        help="the checkpoint lies in a tree written at URL (a copied bucket, an unpacked "
        "fixture): absolute references into URL are read below --moved-to instead",
    )
    parser.add_argument(
        "--moved-to",
        metavar="URL",
        help="with --moved-from: where that tree lies now (default: the checkpoint's directory)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    """Run ``ckptstore copy``: 0 copied, 1 failed, 2 usage error (message on stderr)."""
    try:
        options = parse_storage_options(args.storage_option)
        dest_options = (
            None
            if args.dest_storage_option is None
            else parse_storage_options(args.dest_storage_option)
        )
    except ValueError as exc:
        return _error(exc, 2)
    try:
        result = copy_checkpoint(
            args.pointer,
            args.dest,
            storage_options=options,
            dest_storage_options=dest_options,
            workers=args.workers,
            moved_from=args.moved_from,
            moved_to=args.moved_to,
        )
    except (RelocationError, MetadataFormatError) as exc:
        return _error(exc, 1)
    except (InvalidArgumentError, InvalidPointerError, UnsupportedSchemeError) as exc:
        return _error(exc, 2)
    except (CheckpointStorageError, OSError, ValueError) as exc:
        return _error(exc, 1)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(_summary(result))
    return 0


def _error(exc: BaseException, code: int) -> int:
    print(f"ckptstore copy: {type(exc).__name__}: {exc}", file=sys.stderr)
    return code


def _summary(result: CopyResult) -> str:
    inside = sum(
        1 for f in result.files if not f.target.startswith(f"{result.destination}/_external/")
    )
    return (
        f"Copied checkpoint {result.checkpoint_id} from {redact_text(result.source)} to "
        f"{redact_text(result.destination)}\n"
        f"  {len(result.files)} files, {result.copied_bytes} bytes: {inside} of the checkpoint's "
        f"directory, {len(result.files) - inside} from elsewhere below {EXTERNAL_DIRECTORY}/; "
        f"{result.server_side} copied by the store, {len(result.files) - result.server_side} "
        "streamed\n"
        f"  metadata: {redact_text(result.metadata)}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ckptstore.admin.copy POINTER DEST`` (the same as ``ckptstore copy``)."""
    parser = argparse.ArgumentParser(prog="ckptstore copy")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
