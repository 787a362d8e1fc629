"""Small listing pages: the request ledger answers S3 listings a few entries at a time.

S3 pages every listing (at most 1000 keys of ListObjectsV2 or ListObjects, 1000 uploads of
ListMultipartUploads) and may return fewer than a request asked for; a storage that reads only
the first page leaves objects and uploads behind once a checkpoint holds more than a page.
Nobody writes a thousand state files in a test, so the ledger makes the pages small instead.

How, without touching the request (a rewritten query would break its SigV4 signature on a
server that checks it, behind the counting proxy): the first request of a listing is forwarded
as it came, the server's whole answer becomes a *snapshot*, and the client gets its first
``size`` entries, marked truncated, with a continuation that names the snapshot (ListObjectsV2:
``NextContinuationToken``; ListObjects: ``NextMarker``, the page's last key; uploads:
``NextKeyMarker`` and ``NextUploadIdMarker`` of the page's last upload, read as S3 reads
them: a key marker alone resumes after every upload of that key). The requests that
carry such a continuation are answered from the snapshot, not forwarded: a listing is a
snapshot of its moment on S3 as well. Listings with a non-empty ``delimiter`` (directory
listings with common prefixes) and answers the server truncated itself are passed through unchanged.

Only the standard library; the ledger calls :meth:`ListingPager.answer` and
:meth:`ListingPager.first_page`.
"""

from __future__ import annotations

import itertools
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote

__all__ = ["PAGED_OPERATIONS", "ListingPager"]

#: The listings the pager pages, and the element of one entry in each.
PAGED_OPERATIONS = {
    "ListObjectsV2": "Contents",
    "ListObjects": "Contents",
    "ListMultipartUploads": "Upload",
}
_TOKEN_PREFIX = "ckptconform-page-"


@dataclass(frozen=True, slots=True)
class _Snapshot:
    operation: str
    document: bytes
    namespace: str
    entries: tuple[bytes, ...]
    #: what a continuation names: the key (and upload id) of each entry
    marks: tuple[tuple[str, str], ...]


class ListingPager:
    """Serves listings in pages of at most ``size`` entries (see the module docstring)."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a page holds at least one entry, got {size!r}")
        self.size = size
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._snapshots: dict[str, _Snapshot] = {}
        #: the latest snapshot per (operation, bucket, prefix), for marker continuations
        self._latest: dict[tuple[str, str | None, str], str] = {}
        #: pages answered from a snapshot (continuation requests the server never saw)
        self.served = 0

    def answer(self, operation: str, bucket: str | None, query: str) -> bytes | None:
        """The page a continuation request asks for, or ``None`` to forward the request."""
        params = _params(query)
        if params.get("delimiter"):
            return None
        with self._lock:
            if operation == "ListObjectsV2":
                token = params.get("continuation-token", "")
                if not token.startswith(_TOKEN_PREFIX):
                    return None
                snapshot_id, _, offset = token[len(_TOKEN_PREFIX) :].rpartition("-")
                snapshot = self._snapshots.get(snapshot_id)
                if snapshot is None or not offset.isdigit():
                    return None
                self.served += 1
                return self._page(snapshot_id, snapshot, int(offset))
            key = (operation, bucket, params.get("prefix", ""))
            marker = params.get("key-marker" if operation == "ListMultipartUploads" else "marker")
            snapshot_id = self._latest.get(key, "")
            snapshot = self._snapshots.get(snapshot_id)
            if not marker or snapshot is None:
                return None
            upload_id = params.get("upload-id-marker", "")
            after = _after_marker(snapshot.marks, marker, upload_id)
            if after is None:
                return None
            self.served += 1
            return self._page(snapshot_id, snapshot, after)

    def first_page(
        self, operation: str, bucket: str | None, query: str, status: int | None, body: bytes
    ) -> bytes | None:
        """The first page of the server's answer ``body``, or ``None`` to pass it unchanged."""
        params = _params(query)
        if status != 200 or params.get("delimiter") or operation not in PAGED_OPERATIONS:
            return None
        try:
            root = ET.fromstring(body)
        except ET.ParseError:
            return None
        namespace = root.tag[1:].split("}", 1)[0] if root.tag.startswith("{") else ""
        if _text(root, "IsTruncated", namespace) == "true":
            return None  # the server paged itself: its continuation must reach it
        entry_tag = _tag(PAGED_OPERATIONS[operation], namespace)
        found = root.findall(entry_tag)
        if len(found) <= self.size:
            return None
        # keys come URL-encoded with encoding-type=url; a client sends its marker decoded
        decode = unquote if params.get("encoding-type") == "url" else str
        marks = tuple(
            (decode(_text(entry, "Key", namespace)), _text(entry, "UploadId", namespace))
            for entry in found
        )
        entries = tuple(ET.tostring(entry) for entry in found)
        for entry in found:
            root.remove(entry)
        snapshot = _Snapshot(operation, ET.tostring(root), namespace, entries, marks)
        with self._lock:
            snapshot_id = str(next(self._ids))
            self._snapshots[snapshot_id] = snapshot
            self._latest[(operation, bucket, params.get("prefix", ""))] = snapshot_id
            return self._page(snapshot_id, snapshot, 0)

    def _page(self, snapshot_id: str, snapshot: _Snapshot, offset: int) -> bytes:
        root = ET.fromstring(snapshot.document)
        ns = snapshot.namespace
        chosen = snapshot.entries[offset : offset + self.size]
        for entry in chosen:
            root.append(ET.fromstring(entry))
        end = offset + len(chosen)
        truncated = end < len(snapshot.entries)
        _set(root, "IsTruncated", "true" if truncated else "false", ns)
        for name in ("NextContinuationToken", "NextMarker", "NextKeyMarker", "NextUploadIdMarker"):
            _drop(root, name, ns)
        if snapshot.operation == "ListObjectsV2":
            _set(root, "KeyCount", str(len(chosen)), ns)
            if truncated:
                _set(root, "NextContinuationToken", f"{_TOKEN_PREFIX}{snapshot_id}-{end}", ns)
        elif truncated:
            last = ET.fromstring(snapshot.entries[end - 1])
            if snapshot.operation == "ListObjects":
                _set(root, "NextMarker", _text(last, "Key", ns), ns)
            else:
                _set(root, "NextKeyMarker", _text(last, "Key", ns), ns)
                _set(root, "NextUploadIdMarker", _text(last, "UploadId", ns), ns)
        document = ET.tostring(root, default_namespace=ns or None)
        return b'<?xml version="1.0" encoding="UTF-8"?>\n' + document


def _after_marker(marks: tuple[tuple[str, str], ...], key: str, upload_id: str) -> int | None:
    """Where a marker continuation resumes, as S3 reads the markers: after the entry with
    ``key`` and ``upload_id``; with a key alone, after every entry of that key (S3 then lists
    only keys that sort after it, so a client that drops the upload-id marker skips the other
    uploads of the page's last key). ``None``: the marker names no entry of the snapshot."""
    found = [
        index
        for index, (entry_key, entry_id) in enumerate(marks)
        if entry_key == key and (not upload_id or entry_id == upload_id)
    ]
    return found[-1] + 1 if found else None


def _params(query: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(query, keep_blank_values=True).items()}


def _tag(name: str, namespace: str) -> str:
    return f"{{{namespace}}}{name}" if namespace else name


def _text(element: ET.Element, name: str, namespace: str) -> str:
    child = element.find(_tag(name, namespace))
    return (child.text or "") if child is not None else ""


def _set(root: ET.Element, name: str, value: str, namespace: str) -> None:
    child = root.find(_tag(name, namespace))
    if child is None:
        child = ET.SubElement(root, _tag(name, namespace))
    child.text = value


def _drop(root: ET.Element, name: str, namespace: str) -> None:
    for child in root.findall(_tag(name, namespace)):
        root.remove(child)
