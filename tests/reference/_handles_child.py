"""Child process of ``test_cross_process_handles``: read handles that were written elsewhere.

Run as a script (``python _handles_child.py PAYLOAD_FILE [STORAGE_FILE]``); it imports only
``ckptstore`` and the standard library, as a Spark executor or a restarted coordinator would.
With ``STORAGE_FILE`` it first unpickles that storage (which registers its options in this
process); then it unpickles the payload (a completed location and the state handles written
by the parent), reads the metadata handle and every state handle (relative ones rebased by
the completed location), discards the handles named for discarding, and prints one JSON
line: for each operation either ``{"sha256": ..., "seconds": ...}`` or
``{"error": <class name>, "mro": [...], "message": ..., "seconds": ...}``.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sys
import time
from collections.abc import Callable
from typing import Any


def timed(operation: Callable[[], bytes | None]) -> dict[str, Any]:
    start = time.monotonic()
    try:
        data = operation()
    except Exception as exc:  # reported to the parent, which asserts on it
        return {
            "error": type(exc).__name__,
            "mro": [cls.__name__ for cls in type(exc).__mro__],
            "message": str(exc),
            "seconds": time.monotonic() - start,
        }
    result: dict[str, Any] = {"seconds": time.monotonic() - start}
    if data is not None:
        result["sha256"] = hashlib.sha256(data).hexdigest()
    return result


def read(handle: Any) -> bytes:
    with handle.open_input_stream() as stream:
        return bytes(stream.read())


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        with open(argv[1], "rb") as source:
            pickle.loads(source.read())  # registers the storage's options here
    with open(argv[0], "rb") as source:
        payload = pickle.loads(source.read())
    completed = payload["completed"]
    results: dict[str, Any] = {"metadata": timed(lambda: read(completed.metadata_handle))}
    results["reads"] = [
        timed(lambda h=handle: read(completed.resolve_handle(h))) for handle in payload["handles"]
    ]
    results["discards"] = [
        timed(lambda h=handle: h.discard_state()) for handle in payload.get("discard", [])
    ]
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
