"""What the reference does on S3 beyond plain fsspec: retry budget, conditional writes, deletes.

Adapter
-------
:class:`S3Store` is the adapter of ``s3``/``s3a`` (``ckptstore.stores.protocol``): its clients
are s3fs's with the retry budget (``ckptstore.stores.retry``; :func:`instantiate`), its
exclusive creates :class:`ExclusiveUpload`, its publish :func:`publish_metadata`, its deletes
:func:`delete_below`, its reads :func:`open_sized`, its copies one CopyObject.

Lost answers
------------
A request whose answer is lost after the server carried it out is retried; a retried
exclusive create then finds its own object. :func:`publish_metadata` (``_metadata``: a fixed
name that another coordinator could also write) compares the stored bytes with its own (one
GetObject, only on that failure path) and succeeds when they are equal; a state stream (a
random UUID name only its writer uses) takes an object of the expected size as its own (one
HeadObject, :func:`ckptstore.stores.operations.existing_size` from the stream's
``_committed_despite``).

Conditional writes
------------------
``_metadata`` is published with ``If-None-Match: *``, so an existing one is never replaced
(MD2). Not every server honours that header: s3rver 3.7 ignores it and would let a second
``_metadata`` overwrite the first. :func:`probe_conditional_writes` finds out once per process
per (endpoint, bucket): it creates a probe object ``.ckptstore-probe.<32 hex>`` under the
checkpoint directory with ``If-None-Match: *`` twice (the second must be refused with 412) and
deletes it: three requests, sent by the coordinator's once-per-job setup
(``initialize_base_locations_for_checkpoint``), or lazily before the first ``_metadata`` publish
of a process that ran no setup. The answer is cached (:func:`conditional_write_mode`):

* :data:`CONDITIONAL_WRITES_HONOURED` (``"honoured"``): one conditional PutObject per
  ``_metadata``, nothing else;
* the server ignores the header (or rejects it: 501 NotImplemented), and a warning says so
  once per endpoint and bucket. Then ``_metadata`` cannot be created exclusively, and a second
  coordinator finalizing the same checkpoint could replace it while the first reports
  success (on s3rver even mix two writers' bytes). So by default every finalization there is
  refused with ``ConditionalWritesUnsupportedError`` (an ``OSError`` naming conditional writes
  and the option below; nothing is written): :data:`CONDITIONAL_WRITES_REFUSED`;
* with ``allow_unconditional_metadata=True`` in the storage options (the user accepts the
  risk): :data:`CONDITIONAL_WRITES_CLAIMED`, claim-then-write (:func:`_publish_claimed`). A
  PutObject of a claim ``_metadata.<32 hex>.inprogress``, one ListObjectsV2 of the keys that
  begin with ``_metadata``'s key, the plain PutObject of ``_metadata`` only when that listing
  shows neither ``_metadata`` nor another claim, and the claim's DeleteObject: four requests.
  Of two finalizations the later listing sees the other's claim or, once it is gone, its
  ``_metadata``, so at most one writes and a loser (``MetadataExistsError``) never touches
  ``_metadata``. That holds where the server's listings show every object written before
  them (AWS S3, s3rver); racing finalizations may all give way. A claim left by a crash is a
  leftover (``ckptstore.filesystem.leftovers``).

Reads
-----
:func:`open_sized` reads a state file whose size the handle knows: s3fs's buffered file told
the size (one GetObject, no HeadObject), whose every GET checks the object's size that the
answer names, so an object truncated, extended or replaced behind the storage's back raises
``StateSizeMismatchError`` instead of returning its bytes.

Uploads
-------
:class:`ExclusiveUpload` writes a state file (``ckptstore.stores.operations.open_exclusive_write``):
nothing reaches the store before the stream is committed. It holds at most ``buffer_limit``
bytes of the upload, the part being filled and the part in flight together. A state up to
``buffer_limit`` is one PutObject with ``If-None-Match: *`` at close; a larger one a
multipart upload (CreateMultipartUpload; a first part of ``buffer_limit`` bytes, then parts
of ``part_size``, each sent in the background while the next one fills;
CompleteMultipartUpload with ``If-None-Match: *``). The buffered bytes go to the request as
they are (a file-like body: no copy of the state is made to send it).

Deletes
-------
:func:`delete_below` deletes everything below a directory by itself (not ``fs.rm``): it lists
the open multipart uploads below the prefix (ListMultipartUploads) and aborts them, then sends
one ListObjectsV2 and one DeleteObjects per 1000 keys. Empty or missing: two requests. A server
without ListMultipartUploads (s3rver answers 501) is tolerated, said once per endpoint in a
warning. A key that begins or ends with whitespace is deleted with a DeleteObject of its own
(an XML body may lose that whitespace: s3rver deletes another key then), and a DeleteObjects
answered with an error is checked with the same listing again: keys that are gone count as
deleted (s3rver answers 500 when its parallel deletes race on an emptied directory). Callers
confine it to the layout (``ckptstore.filesystem.layout``); it refuses a bucket's root.

s3fs and botocore are imported lazily: a storage on local disks or in memory never pays for them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import functools
import io
import os
import re
import threading
import uuid
from collections.abc import Mapping
from typing import Any, cast

from ckptstore.errors import (
    ConditionalWritesUnsupportedError,
    DisposalRefusedError,
    MetadataExistsError,
)
from ckptstore.io_errors import causal_chain, endpoint_label, is_unreachable, size_mismatch
from ckptstore.paths import StoragePath
from ckptstore.redaction import get_logger, redact_text
from ckptstore.stores import retry
from ckptstore.stores.protocol import ALLOW_UNCONDITIONAL_METADATA, FsspecStore

__all__ = [
    "ALLOW_UNCONDITIONAL_METADATA",
    "CLAIM_SUFFIX",
    "CONDITIONAL_WRITES_CLAIMED",
    "CONDITIONAL_WRITES_HONOURED",
    "CONDITIONAL_WRITES_IGNORED",
    "CONDITIONAL_WRITES_REFUSED",
    "CONDITIONAL_WRITES_UNKNOWN",
    "MIN_PART_SIZE",
    "PROBE_PREFIX",
    "MAX_COPY_OBJECT_SIZE",
    "OBJECT_STORE_PART_SIZE",
    "OBJECT_STORE_UPLOAD_BUFFER",
    "ExclusiveUpload",
    "S3Store",
    "abort_upload",
    "allows_unconditional_metadata",
    "claim_name",
    "conditional_write_mode",
    "delete_below",
    "error_code",
    "head_object",
    "instantiate",
    "list_open_uploads",
    "open_sized",
    "probe_conditional_writes",
    "publish_metadata",
    "reset_conditional_write_modes",
]

_LOG = get_logger(__name__)


CONDITIONAL_WRITES_HONOURED = "honoured"
#: The probe's answer where the server ignores conditional writes (kept per endpoint and bucket).
CONDITIONAL_WRITES_IGNORED = "ignored"
#: Ignored, and the file system allows unconditional metadata: claim-then-write.
CONDITIONAL_WRITES_CLAIMED = "ignored: claim-then-write"
#: Ignored, and unconditional metadata is not allowed: every finalization is refused.
CONDITIONAL_WRITES_REFUSED = "ignored: finalization refused"
#: Not probed yet in this process (the coordinator's setup or the first publish will).
CONDITIONAL_WRITES_UNKNOWN = "unknown: not probed yet"
#: The probe object's name: this prefix and 32 hex characters (``ckptstore.filesystem.layout``).
PROBE_PREFIX = ".ckptstore-probe."
#: A claim is named ``_metadata.<32 hex>.inprogress`` (``ckptstore.filesystem.layout``).
CLAIM_SUFFIX = ".inprogress"
_CLAIM_TAIL = re.compile(r"\.[0-9a-f]{32}" + re.escape(CLAIM_SUFFIX))

_PAGE = 1000


# --------------------------------------------------------------------------- errors


def error_code(exc: BaseException) -> str | None:
    """The S3 error code (``PreconditionFailed``, ``NoSuchUpload``...) behind ``exc``, if any."""
    for item in causal_chain(exc):
        response = getattr(item, "response", None)
        if isinstance(response, Mapping):
            error = response.get("Error")
            if isinstance(error, Mapping) and error.get("Code"):
                return str(error["Code"])
    return None


def _is_precondition_failure(exc: BaseException) -> bool:
    """A refused ``If-None-Match: *``: 412 ``PreconditionFailed`` (``412`` where the answer
    has no body), or AWS's 409 ``ConditionalRequestConflict`` for two conditional writes at
    once. s3fs raises its own error while it handles botocore's, so botocore's error, and
    its code, is in the chain (:func:`error_code`)."""
    return error_code(exc) in ("PreconditionFailed", "412", "ConditionalRequestConflict")


def _not_implemented(exc: BaseException) -> bool:
    return error_code(exc) in ("NotImplemented", "501")


# --------------------------------------------------------------------------- clients


def instantiate(options: Mapping[str, Any]) -> Any:
    """An S3 file system for ``options`` with its retry policy (``retry.policy_of``).

    ``retries`` (s3fs's retry loop) is an attribute of the instance, so the instance is
    private (``skip_instance_cache``).
    """
    kwargs = dict(options)
    policy = retry.policy_of(kwargs)
    retries = kwargs.pop("retries", None)
    kwargs.pop(retry.RETRY_ATTEMPTS, None)
    kwargs.pop(retry.RETRY_SECONDS, None)
    unconditional = bool(kwargs.pop(ALLOW_UNCONDITIONAL_METADATA, None))
    kwargs["skip_instance_cache"] = True
    from ckptstore.stores.budgeted_s3 import BudgetedS3FileSystem

    fs = BudgetedS3FileSystem(**kwargs)
    if retries is not None:
        fs.retries = max(1, int(retries))
    fs.ckptstore_policy = policy
    fs.ckptstore_allow_unconditional_metadata = unconditional
    return fs


# --------------------------------------------------------------------------- objects


def _bucket_key(fs: Any, path: StoragePath) -> tuple[str, str]:
    bucket, key, _ = fs.split_path(path.path)
    return str(bucket), str(key)


def head_object(fs: Any, path: StoragePath) -> dict[str, Any] | None:
    """Exactly one HeadObject: the object's metadata, or ``None`` when it does not exist.

    (``fs.info`` would list the prefix after a 404, to find a directory.)
    """
    bucket, key = _bucket_key(fs, path)
    try:
        return dict(fs.call_s3("head_object", Bucket=bucket, Key=key))
    except FileNotFoundError:  # s3fs translates 404 (a HEAD's answer has no code of its own)
        return None


# --------------------------------------------------------------------------- uploads

#: S3's smallest part (all parts of a multipart upload but the last).
MIN_PART_SIZE = 5 * 1024 * 1024


class ExclusiveUpload:
    """A binary writer that creates one S3 object at ``close()``, only if it does not exist.

    At most ``buffer_limit`` bytes of the object are held in memory (the part being filled
    and the one in flight together; see the module docstring): a state up to that size is one
    PutObject at close, a larger one a multipart upload whose first part is ``buffer_limit``
    bytes and whose other parts are ``part_size`` (at least :data:`MIN_PART_SIZE`); one part
    uploads in the background while the next one fills. Its failure comes out of the next
    ``write`` or of ``close``. ``discard()`` aborts a started multipart upload and commits
    nothing. Requests go through the file system's ``_call_s3``, so its retry budget and
    error translation apply, and ``If-None-Match: *`` makes the commit exclusive.
    """

    def __init__(
        self, fs: Any, bucket: str, key: str, *, buffer_limit: int, part_size: int
    ) -> None:
        self._fs = fs
        self._bucket = bucket
        self._key = key
        self._part_size = max(MIN_PART_SIZE, part_size)
        self._limit = max(self._part_size, buffer_limit)
        self._buffer: io.BytesIO | None = io.BytesIO()
        self._buffered = 0
        self._upload_id: str | None = None
        self._parts: list[dict[str, Any]] = []
        self._in_flight: concurrent.futures.Future[Any] | None = None
        self._in_flight_size = 0
        self._in_flight_number = 0
        self.closed = False

    @property
    def upload_id(self) -> str | None:
        """The multipart upload's id once one was started."""
        return self._upload_id

    def fileno(self) -> int:
        raise io.UnsupportedOperation("an S3 upload has no file descriptor")

    def flush(self) -> None:
        """Nothing to do: parts go out when they are full, the object at ``close()``."""

    def write(self, data: Any, /) -> int:
        if self.closed or self._buffer is None:
            raise ValueError("I/O operation on closed file")
        view = data if isinstance(data, bytes) else memoryview(data).cast("B")
        size = len(view)
        done = 0
        while done < size:
            cap = self._part_size if self._upload_id is not None else self._limit
            room = min(cap - self._buffered, self._limit - self._in_flight_size - self._buffered)
            if room <= 0:
                if self._buffered >= cap:
                    self._send_part()  # a full part and more to come
                else:
                    self._wait()  # memory: the part in flight must land first
                continue
            take = min(room, size - done)
            if take == size:
                self._buffer.write(view)
            else:
                self._buffer.write(memoryview(view)[done : done + take])
            self._buffered += take
            done += take
        return size

    def _call(self, method: str, **kwargs: Any) -> Any:
        return self._fs.call_s3(method, Bucket=self._bucket, Key=self._key, **kwargs)

    def _send_part(self) -> None:
        """Send the buffer as the next part in the background (after the one in flight)."""
        assert self._buffer is not None
        if self._upload_id is None:
            self._upload_id = str(self._call("create_multipart_upload")["UploadId"])
        self._wait()
        body, size = self._buffer, self._buffered
        body.seek(0)
        self._buffer, self._buffered = io.BytesIO(), 0
        number = len(self._parts) + 1
        call = self._fs._call_s3(
            "upload_part",
            Bucket=self._bucket,
            Key=self._key,
            UploadId=self._upload_id,
            PartNumber=number,
            Body=body,
        )
        self._in_flight = asyncio.run_coroutine_threadsafe(call, self._fs.loop)
        self._in_flight_size = size
        self._in_flight_number = number

    def _wait(self) -> None:
        """Wait for the part in flight; its failure is raised here."""
        future = self._in_flight
        if future is None:
            return
        number = self._in_flight_number
        self._in_flight, self._in_flight_size = None, 0
        answer = future.result()
        part = {"PartNumber": number, "ETag": answer["ETag"]}
        if "ChecksumSHA256" in answer:
            part["ChecksumSHA256"] = answer["ChecksumSHA256"]
        self._parts.append(part)

    def close(self) -> None:
        """Commit: one exclusive PutObject, or the last part and the exclusive completion."""
        if self.closed:
            return
        try:
            buffer = self._buffer
            if buffer is None:
                return
            if self._upload_id is None:
                buffer.seek(0)
                self._call("put_object", Body=buffer, IfNoneMatch="*")
            else:
                if self._buffered:
                    self._send_part()
                self._wait()
                self._call(
                    "complete_multipart_upload",
                    UploadId=self._upload_id,
                    MultipartUpload={"Parts": self._parts},
                    IfNoneMatch="*",
                )
            self._buffered = 0
        finally:
            self.closed = True
            self._buffer = None

    def discard(self) -> None:
        """Drop the buffer, cancel a part in flight and abort a started multipart upload."""
        self.closed = True
        self._buffer = None
        future, self._in_flight = self._in_flight, None
        if future is not None:
            future.cancel()
        upload_id, self._upload_id = self._upload_id, None
        if upload_id is not None:
            abort_upload(self._fs, self._bucket, self._key, upload_id)

    def __enter__(self) -> ExclusiveUpload:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ExclusiveUpload s3://{self._bucket}/{self._key}>"


# --------------------------------------------------------------------------- sized reads


def open_sized(fs: Any, path: StoragePath, size: int) -> Any:
    """A reader of the object at ``path`` whose state is ``size`` bytes: one GET, no HEAD.

    s3fs's buffered file, told the size (so it sends no HeadObject), whose every ranged GET
    compares the object's size that the answer names (``Content-Range``) with ``size`` and
    raises ``StateSizeMismatchError`` when they differ (a range that starts beyond the
    object's end is refused with 416 ``InvalidRange``: the object is shorter). A reader never
    asks beyond ``size``, so this is how it notices an object that grew. An empty state
    costs one GetObject at the first read, to make sure the object is still empty.
    """
    return _sized_file_class()(fs, path, size)


@functools.cache
def _sized_file_class() -> type:
    """The s3fs file class of :func:`open_sized` (s3fs is imported on first use)."""
    from fsspec.asyn import sync
    from s3fs.core import S3File

    class SizedObjectFile(S3File):  # type: ignore[misc]
        """s3fs's reader of an object that must hold exactly ``size`` bytes."""

        def __init__(self, fs: Any, path: StoragePath, size: int) -> None:
            super().__init__(
                fs,
                path.fs_path,
                mode="rb",
                block_size=fs.default_block_size,
                fill_cache=fs.default_fill_cache,
                cache_type=fs.default_cache_type,
                requester_pays=fs.requester_pays,
                size=size,
            )
            self._details = {"name": path.fs_path, "size": size, "type": "file"}
            self._state = path
            self._checked = size > 0  # an empty state is checked at the first read

        def _fetch_range(self, start: int, end: int) -> bytes:
            if start >= end:
                return b""
            return cast(bytes, sync(self.fs.loop, self._get, start, end))

        def read(self, length: int = -1) -> bytes:
            if not self._checked:
                self._checked = True
                sync(self.fs.loop, self._get, 0, 0)
            return bytes(super().read(length))

        async def _get(self, start: int, end: int) -> bytes:
            """GET ``[start, end)`` (the whole object when empty) and check its size."""
            from s3fs.core import _error_wrapper

            async def call_and_read() -> bytes:
                ranged = {"Range": f"bytes={start}-{end - 1}"} if end > start else {}
                try:
                    answer = await self.fs._call_s3(
                        "get_object", Bucket=self.bucket, Key=self.key, **ranged, **self.read_kw
                    )
                except Exception as exc:
                    if error_code(exc) in ("InvalidRange", "416"):
                        found = f"it ends before byte {start}"
                        raise size_mismatch(self._state, self.size, found) from exc
                    raise
                body = answer["Body"]
                try:
                    stored = _object_size(answer)
                    if stored is not None and stored != self.size:
                        raise size_mismatch(self._state, self.size, f"it holds {stored} bytes")
                    return bytes(await body.read()) if ranged else b""
                finally:
                    body.close()

            return cast(bytes, await _error_wrapper(call_and_read, retries=self.fs.retries))

    return SizedObjectFile


def _object_size(answer: Mapping[str, Any]) -> int | None:
    """The object's whole size as a GetObject answer names it: the total of ``Content-Range``
    (``bytes 0-99/2000``) for a ranged GET, else ``Content-Length``; ``None`` if unknown."""
    ranged = answer.get("ContentRange")
    if isinstance(ranged, str):
        total = ranged.rpartition("/")[2].strip()
        return int(total) if total.isdigit() else None
    length = answer.get("ContentLength")
    return int(length) if isinstance(length, int) else None


# --------------------------------------------------------------------------- conditional writes

_MODES: dict[tuple[str, str], str] = {}
_MODE_LOCKS: dict[tuple[str, str], threading.Lock] = {}
_MODES_LOCK = threading.Lock()


def _rearm_after_fork() -> None:
    """In a forked child: fresh locks (a parent's thread may have held one at the fork, a
    probe's lock even during its requests); the probe answers stay (they are the server's)."""
    global _MODES_LOCK
    _MODES_LOCK = threading.Lock()
    _MODE_LOCKS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_rearm_after_fork)


def _mode_key(fs: Any, path: StoragePath) -> tuple[str, str]:
    bucket, _ = _bucket_key(fs, path)
    return endpoint_label(fs, path.scheme), bucket


def allows_unconditional_metadata(fs: Any) -> bool:
    """Whether ``fs`` was made with ``allow_unconditional_metadata`` (:func:`instantiate`)."""
    return bool(getattr(fs, "ckptstore_allow_unconditional_metadata", False))


def conditional_write_mode(fs: Any, path: StoragePath) -> str:
    """What this process knows about conditional writes at ``path``'s endpoint and bucket.

    :data:`CONDITIONAL_WRITES_HONOURED`; where the server ignores them
    :data:`CONDITIONAL_WRITES_CLAIMED` (``fs`` allows unconditional metadata) or
    :data:`CONDITIONAL_WRITES_REFUSED`; before the probe ran
    :data:`CONDITIONAL_WRITES_UNKNOWN`. No I/O.
    """
    with _MODES_LOCK:
        mode = _MODES.get(_mode_key(fs, path), CONDITIONAL_WRITES_UNKNOWN)
    if mode != CONDITIONAL_WRITES_IGNORED:
        return mode
    if allows_unconditional_metadata(fs):
        return CONDITIONAL_WRITES_CLAIMED
    return CONDITIONAL_WRITES_REFUSED


def reset_conditional_write_modes() -> None:
    """Forget every probe answer of this process (tests; a server that was upgraded)."""
    with _MODES_LOCK:
        _MODES.clear()


def probe_conditional_writes(fs: Any, directory: StoragePath) -> str:
    """Find out (once per process per endpoint and bucket) whether ``If-None-Match`` holds.

    Sends, the first time only: PutObject of ``<directory>/.ckptstore-probe.<32 hex>`` with
    ``If-None-Match: *``, the same again (refused with 412 where conditional writes are
    honoured), DeleteObject of the probe. A failure of the first PUT raises (the store cannot
    be written there); a failed delete is logged and leaves the probe for the leftover
    cleaner. Returns the mode (:func:`conditional_write_mode`).
    """
    key = _mode_key(fs, directory)
    with _MODES_LOCK:
        known = _MODES.get(key)
        lock = _MODE_LOCKS.setdefault(key, threading.Lock())
    if known is None:
        with lock:
            with _MODES_LOCK:
                known = _MODES.get(key)
            if known is None:
                known = _probe(fs, directory)
                with _MODES_LOCK:
                    _MODES[key] = known
                if known != CONDITIONAL_WRITES_HONOURED:
                    _LOG.warning(
                        "The S3 server at %s (bucket %s) ignores conditional writes "
                        "(If-None-Match: *): _metadata cannot be created exclusively there. "
                        "Finalizations are refused unless the storage options set %s=True "
                        "(claim-then-write: a marker object and one listing per _metadata).",
                        key[0],
                        key[1],
                        ALLOW_UNCONDITIONAL_METADATA,
                    )
    return conditional_write_mode(fs, directory)


def _probe(fs: Any, directory: StoragePath) -> str:
    probe = directory.child(f"{PROBE_PREFIX}{uuid.uuid4().hex}")
    bucket, key = _bucket_key(fs, probe)
    put = {"Bucket": bucket, "Key": key, "Body": b"", "IfNoneMatch": "*"}
    try:
        fs.call_s3("put_object", **put)
    except Exception as exc:
        if _not_implemented(exc):
            return CONDITIONAL_WRITES_IGNORED
        raise
    try:
        fs.call_s3("put_object", **put)
        mode = CONDITIONAL_WRITES_IGNORED
    except Exception as exc:
        if not _is_precondition_failure(exc):
            _delete_quietly(fs, probe)
            raise
        mode = CONDITIONAL_WRITES_HONOURED
    _delete_quietly(fs, probe)
    return mode


def _delete_quietly(fs: Any, path: StoragePath) -> None:
    """Delete the conditional-write probe ``path``; a failure is a warning."""
    _delete_leftover(fs, path, "conditional-write probe")


def _drop_claim(fs: Any, claim: StoragePath) -> None:
    """Delete the claim ``claim`` of a finalization; a failure is a warning."""
    _delete_leftover(fs, claim, "claim")


def _delete_leftover(fs: Any, path: StoragePath, what: str) -> None:
    bucket, key = _bucket_key(fs, path)
    try:
        fs.call_s3("delete_object", Bucket=bucket, Key=key)
    except Exception as exc:
        _LOG.warning(
            "Could not delete the %s %s (%s); the leftover cleaner removes it later.",
            what,
            path.url,
            redact_text(f"{type(exc).__name__}: {exc}", limit=300),
        )


def publish_metadata(fs: Any, path: StoragePath, data: bytes, probe_dir: StoragePath) -> None:
    """Publish ``_metadata`` on S3: once, never over another one (module docstring).

    Honoured: one PutObject with ``If-None-Match: *``. Ignored: refused with
    ``ConditionalWritesUnsupportedError`` unless ``fs`` allows unconditional metadata, then
    claim-then-write (:func:`_publish_claimed`). A lost answer is recognised by the stored
    bytes (:func:`_put_metadata`).
    """
    mode = probe_conditional_writes(fs, probe_dir)
    if mode == CONDITIONAL_WRITES_HONOURED:
        _put_metadata(fs, path, data, IfNoneMatch="*")
    elif mode == CONDITIONAL_WRITES_CLAIMED:
        _publish_claimed(fs, path, data)
    else:
        raise ConditionalWritesUnsupportedError(_refusal(fs, path))


def _refusal(fs: Any, path: StoragePath) -> str:
    """Why ``_metadata`` is not published where the server ignores conditional writes."""
    endpoint, bucket = _mode_key(fs, path)
    return (
        f"Refused to publish {path.url}: the S3 server at {endpoint} (bucket {bucket}) ignores "
        "conditional writes (If-None-Match: *), so _metadata cannot be created exclusively: "
        "another coordinator finalizing this checkpoint could replace it unnoticed. Nothing "
        "was written. Use a server with conditional writes, or accept the risk with the "
        f"storage option {ALLOW_UNCONDITIONAL_METADATA}=True (claim-then-write: it needs "
        "listings that show every earlier write, and racing finalizations may all fail)."
    )


def _put_metadata(fs: Any, path: StoragePath, data: bytes, **conditions: str) -> None:
    """One PutObject of ``_metadata``. On a failed precondition, or any failure after which
    the object may have been written (an answer lost on every attempt), one GetObject
    decides: exactly ``data`` means our own write committed (success), other bytes
    ``MetadataExistsError``; otherwise the failure is raised."""
    bucket, key = _bucket_key(fs, path)
    try:
        fs.call_s3("put_object", Bucket=bucket, Key=key, Body=data, **conditions)
    except Exception as exc:
        if is_unreachable(exc):
            raise
        if _stored_bytes_equal(fs, path, data):
            _LOG.info("_metadata %s: our own write had committed (its answer was lost)", path.url)
            return
        if _is_precondition_failure(exc):
            raise MetadataExistsError(f"Target file {path.url} already exists.") from exc
        raise
    finally:
        fs.invalidate_cache(path.path)


def claim_name(metadata_name: str) -> str:
    """A fresh claim object's name beside ``metadata_name``: ``<name>.<32 hex>.inprogress``."""
    return f"{metadata_name}.{uuid.uuid4().hex}{CLAIM_SUFFIX}"


def _publish_claimed(fs: Any, path: StoragePath, data: bytes) -> None:
    """Claim-then-write, for servers that ignore conditional writes (the user opted in).

    PutObject of a claim ``<_metadata>.<32 hex>.inprogress``; one ListObjectsV2 of the keys
    that begin with ``_metadata``'s own key; the unconditional PutObject of ``_metadata`` only
    when the listing shows neither ``_metadata`` nor another claim; DeleteObject of the claim
    (four requests). Of two finalizations, the later listing shows the earlier one's claim
    or, once that claim is gone, its ``_metadata``: at most one writes, and a loser never
    touches ``_metadata``. Racing finalizations may all give way.
    """
    claim = path.parent.child(claim_name(path.name))
    bucket, key = _bucket_key(fs, path)
    _, claim_key = _bucket_key(fs, claim)
    fs.call_s3("put_object", Bucket=bucket, Key=claim_key, Body=b"")
    try:
        rivals = _rivals(fs, bucket, key, claim_key)
        if key in rivals:
            raise MetadataExistsError(f"Target file {path.url} already exists.")
        if rivals:
            raise MetadataExistsError(
                f"Target file {path.url} is being published by another finalization of this "
                f"checkpoint ({len(rivals)} other claim(s) in its directory); this one gave "
                "way and wrote nothing (the server ignores conditional writes)."
            )
        _put_metadata(fs, path, data)
    finally:
        _drop_claim(fs, claim)


def _rivals(fs: Any, bucket: str, key: str, own_claim: str) -> set[str]:
    """``key`` (``_metadata``) if it exists and the claims beside it other than ``own_claim``
    (one ListObjectsV2 of the keys that begin with ``key``); a listing of more than one page
    counts as a rival (more than a thousand claims: nothing sane is racing there)."""
    page = fs.call_s3("list_objects_v2", Bucket=bucket, Prefix=key, MaxKeys=_PAGE)
    listed = {str(item["Key"]) for item in page.get("Contents") or ()}
    rivals = {k for k in listed if k == key or _is_claim_of(k, key)} - {own_claim}
    if page.get("IsTruncated"):
        rivals.add(f"{key}.<more claims>{CLAIM_SUFFIX}")
    return rivals


def _is_claim_of(candidate: str, key: str) -> bool:
    suffix = candidate[len(key) :]
    return candidate.startswith(key) and _CLAIM_TAIL.fullmatch(suffix) is not None


def _stored_bytes_equal(fs: Any, path: StoragePath, data: bytes) -> bool:
    try:
        stored = fs.cat_file(path.path, max_concurrency=1)  # one GET, no HEAD for the size
    except Exception:
        return False
    return bytes(stored) == data


# --------------------------------------------------------------------------- deletes

#: endpoints already warned about a missing ListMultipartUploads (once per endpoint)
_WARNED_NO_UPLOAD_LISTING: set[str] = set()
_WARNED_LOCK = threading.Lock()


def _prefix(fs: Any, directory: StoragePath) -> tuple[str, str]:
    bucket, key = _bucket_key(fs, directory)
    key = key.strip("/")
    if not bucket or not key:
        raise DisposalRefusedError(
            f"refused to delete everything in the bucket of {redact_text(directory.url)}: "
            "only a directory below a bucket's root can be deleted. Nothing was deleted."
        )
    return bucket, key + "/"


def list_open_uploads(fs: Any, directory: StoragePath) -> list[dict[str, Any]] | None:
    """The open multipart uploads below ``directory`` (ListMultipartUploads, per 1000).

    ``None`` when the server does not implement the listing (s3rver: 501), said once per
    endpoint in a warning.
    """
    bucket, prefix = _prefix(fs, directory)
    uploads: list[dict[str, Any]] = []
    markers: dict[str, str] = {}
    while True:
        try:
            page = fs.call_s3(
                "list_multipart_uploads",
                Bucket=bucket,
                Prefix=prefix,
                MaxUploads=_PAGE,
                **markers,
            )
        except Exception as exc:
            if _not_implemented(exc) or error_code(exc) in ("MethodNotAllowed", "405"):
                _warn_no_upload_listing(endpoint_label(fs, directory.scheme))
                return None
            raise
        uploads.extend(dict(item) for item in page.get("Uploads") or ())
        if not page.get("IsTruncated"):
            return uploads
        key_marker = page.get("NextKeyMarker")
        upload_marker = page.get("NextUploadIdMarker")
        if not key_marker:
            return uploads
        markers = {"KeyMarker": key_marker}
        if upload_marker:
            markers["UploadIdMarker"] = upload_marker


def _warn_no_upload_listing(endpoint: str) -> None:
    with _WARNED_LOCK:
        if endpoint in _WARNED_NO_UPLOAD_LISTING:
            return
        _WARNED_NO_UPLOAD_LISTING.add(endpoint)
    _LOG.warning(
        "The S3 server at %s does not implement ListMultipartUploads: disposals and the "
        "leftover cleaner delete every object but cannot find open multipart uploads to abort "
        "(a bucket lifecycle rule AbortIncompleteMultipartUpload removes them).",
        endpoint,
    )


def abort_upload(fs: Any, bucket: str, key: str, upload_id: str) -> None:
    """AbortMultipartUpload; one that is gone already (NoSuchUpload) is fine."""
    with contextlib.suppress(FileNotFoundError):  # s3fs translates NoSuchUpload
        fs.call_s3("abort_multipart_upload", Bucket=bucket, Key=key, UploadId=upload_id)


def delete_below(fs: Any, directory: StoragePath) -> None:
    """Delete every object below ``directory`` and abort its open multipart uploads.

    Requests: ListMultipartUploads (+ one AbortMultipartUpload per open upload), then one
    ListObjectsV2 and one DeleteObjects per 1000 keys; a key that begins or ends with
    whitespace goes in a DeleteObject of its own (:func:`_xml_safe`). A DeleteObjects that
    fails is checked with the same listing again (:func:`_delete_page`). Objects not
    deleted raise ``CheckpointIOError`` naming the first one.
    """
    bucket, prefix = _prefix(fs, directory)
    for upload in list_open_uploads(fs, directory) or ():
        abort_upload(fs, bucket, str(upload["Key"]), str(upload["UploadId"]))
    token: str | None = None
    while True:
        request: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": _PAGE}
        if token:
            request["ContinuationToken"] = token
        page = fs.call_s3("list_objects_v2", **request)
        listed = (str(item["Key"]) for item in page.get("Contents") or ())
        keys = [key for key in listed if key.startswith(prefix)]  # what S3 lists, no more
        if keys:
            _delete_page(fs, request, keys)
        token = page.get("NextContinuationToken")
        if not page.get("IsTruncated") or not token:
            break
    fs.invalidate_cache(directory.path)


def _xml_safe(key: str) -> bool:
    """Whether ``key`` survives a DeleteObjects body: XML parsers may trim the whitespace that
    begins or ends an element's text (s3rver 3.7 does, and then deletes another key)."""
    return key == key.strip(" \t\r\n")


def _delete_page(fs: Any, listing: dict[str, Any], keys: list[str]) -> None:
    """Delete ``keys`` (one page of ``listing``): one DeleteObjects for those whose names
    survive XML, one DeleteObject for each other. A DeleteObjects answered with an error may
    have deleted its keys anyway (s3rver answers 500 when its parallel deletes race on the
    emptied directory): the same listing again decides, and only keys still listed fail."""
    bucket = str(listing["Bucket"])
    batch = [key for key in keys if _xml_safe(key)]
    for key in keys:
        if not _xml_safe(key):
            fs.call_s3("delete_object", Bucket=bucket, Key=key)
    if not batch:
        return
    try:
        _delete_keys(fs, bucket, batch)
    except _KeysNotDeletedError:
        raise  # the server said which keys it kept
    except Exception as exc:
        if is_unreachable(exc):
            raise
        again = fs.call_s3("list_objects_v2", **listing)
        left = {str(item["Key"]) for item in again.get("Contents") or ()} & set(batch)
        if left:
            raise
        _LOG.info("DeleteObjects failed (%s), but none of its keys is left", type(exc).__name__)


class _KeysNotDeletedError(OSError):
    """The server answered a DeleteObjects with an ``<Error>`` for some of its keys."""


def _delete_keys(fs: Any, bucket: str, keys: list[str]) -> None:
    answer = fs.call_s3(
        "delete_objects",
        Bucket=bucket,
        Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True},
    )
    errors = [e for e in answer.get("Errors") or () if e.get("Code") != "NoSuchKey"]
    if errors:
        first = errors[0]
        raise _KeysNotDeletedError(
            errno.EIO,
            f"{len(errors)} of {len(keys)} objects were not deleted; the first: "
            f"{first.get('Key')}: {first.get('Code')} {first.get('Message')}",
        )


# --------------------------------------------------------------------------- the adapter

#: Bytes of one S3 state upload held in memory at most (:class:`ExclusiveUpload`): a state up
#: to this size is one PutObject; a larger one a multipart upload of a first part this size and
#: then parts of :data:`OBJECT_STORE_PART_SIZE`. With the interpreter's own allocations a
#: stream stays within the write buffer + 64 MiB that issue 13 sets, and no state file of up to
#: 48 MiB pays for a multipart upload (s3fs itself buffers 50 MiB blocks and holds three
#: copies of one while it sends it).
OBJECT_STORE_UPLOAD_BUFFER = 48 * 1024 * 1024
#: Parts after the first: half the buffer, so one can fill while the other is in flight.
OBJECT_STORE_PART_SIZE = OBJECT_STORE_UPLOAD_BUFFER // 2
#: The largest object one S3 CopyObject request copies (larger ones need a multipart copy).
MAX_COPY_OBJECT_SIZE = 5 * 2**30


def _exclusive_upload(fs: Any, path: StoragePath) -> ExclusiveUpload:
    """The writer of an S3 state file: :data:`OBJECT_STORE_UPLOAD_BUFFER` in memory at most.

    Storage options that size s3fs's writes are kept: ``default_block_size`` (other than
    s3fs's own 50 MiB) is both the buffer and the part size, as for s3fs's own files, and
    ``fixed_upload_size`` (stores that want equal parts) makes the first part a regular one.
    """
    bucket, key, _ = fs.split_path(path.fs_path)
    if not key:
        raise ValueError(f"not an object's path: {path.url}")
    limit, part = OBJECT_STORE_UPLOAD_BUFFER, OBJECT_STORE_PART_SIZE
    block = getattr(fs, "default_block_size", None)
    if isinstance(block, int) and block != getattr(type(fs), "default_block_size", block):
        limit = part = block
    elif getattr(fs, "fixed_upload_size", False):
        limit = part
    return ExclusiveUpload(fs, str(bucket), str(key), buffer_limit=limit, part_size=part)


class S3Store(FsspecStore):
    """``s3``/``s3a``: s3fs with the retry budget, conditional writes, GET-only sized reads,
    deletes that abort open multipart uploads (module docstring)."""

    def client_options(self, options: dict[str, Any]) -> dict[str, Any]:
        return retry.s3_client_options(options)

    def instantiate(self, scheme: str, options: Mapping[str, Any]) -> Any:
        return instantiate(options)

    def open_exclusive_write(self, fs: Any, path: StoragePath) -> Any:
        return _exclusive_upload(fs, path)

    def publish(self, fs: Any, path: StoragePath, data: bytes, probe_dir: StoragePath) -> None:
        publish_metadata(fs, path, data, probe_dir)

    def probe_conditional_writes(self, fs: Any, directory: StoragePath) -> str:
        return probe_conditional_writes(fs, directory)

    def conditional_write_mode(self, fs: Any, path: StoragePath) -> str:
        return conditional_write_mode(fs, path)

    def misreading(self, fs: Any, path: StoragePath) -> str | None:
        """s3fs's ``split_path`` cuts a key at ``?versionId=`` (and reads ARNs as buckets)."""
        split_path = getattr(fs, "split_path", None)  # a client without one reads keys as given
        if split_path is None:
            return None
        bucket, _, key = path.path.partition("/")
        read_bucket, read_key, version = split_path(path.path)
        if (read_bucket, read_key, version) != (bucket, key, None):
            return f"s3fs reads it as the key {redact_text(read_key)!r} of {read_bucket!r}"
        return None

    def delete_tree(self, fs: Any, path: StoragePath) -> None:
        delete_below(fs, path)

    def open_for_read(self, fs: Any, path: StoragePath, size: int) -> Any:
        if size >= 0:
            return open_sized(fs, path, size)
        return super().open_for_read(fs, path, size)

    def copy_exclusive(self, fs: Any, source: StoragePath, target: StoragePath, size: int) -> None:
        """One CopyObject (no HEAD) for files up to 5 GiB of known size, else s3fs's
        multipart copy; S3's CopyObject cannot be made exclusive everywhere, so callers pick
        fresh random target names."""
        if 0 <= size <= MAX_COPY_OBJECT_SIZE:
            from fsspec.asyn import sync

            sync(fs.loop, fs._copy_basic, source.fs_path, target.fs_path)
        else:
            fs.copy(source.fs_path, target.fs_path)

    def list_open_uploads(self, fs: Any, directory: StoragePath) -> list[dict[str, Any]] | None:
        return list_open_uploads(fs, directory)
