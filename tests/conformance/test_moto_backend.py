"""The moto backend's conditional writes: served one at a time, as S3 decides them atomically.

moto checks If-None-Match and then writes, in two steps that concurrent requests interleave;
``AtomicConditionalWrites`` serializes the writes that carry a condition. A stand-in WSGI app
that checks, waits and writes shows the difference without moto's timing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from ckptconform.backends.moto import AtomicConditionalWrites

#: how long the stand-in app waits between its check and its write (unless a GET comes)
CHECK_TO_WRITE_SECONDS = 0.05
#: the same while a GET is sent (which ends the wait when it is served)
WAIT_FOR_GET_SECONDS = 2.0


def _check_then_write(
    store: dict[str, bytes], wrote: threading.Event, wait: float = CHECK_TO_WRITE_SECONDS
) -> Callable[..., Any]:
    """A WSGI app that creates ``PATH_INFO`` unless it exists (If-None-Match: *), waiting
    ``wait`` seconds between the check and the write, or until a GET is served."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        key = environ["PATH_INFO"]
        if environ["REQUEST_METHOD"] == "GET":
            wrote.set()
            start_response("200 OK", [])
            return [store.get(key, b"")]
        if "HTTP_IF_NONE_MATCH" in environ and key in store:
            start_response("412 Precondition Failed", [])
            return [b""]
        wrote.wait(wait)
        store[key] = environ["ckptconform.body"]
        start_response("200 OK", [])
        return [b""]

    return app


def _call(app: Callable[..., Any], method: str, **headers: str) -> str:
    """One request to ``app``: its status line's code."""
    status: list[str] = []
    environ = {"REQUEST_METHOD": method, "PATH_INFO": "/bucket/key", **headers}
    environ["ckptconform.body"] = threading.current_thread().name.encode()
    body = app(environ, lambda line, _headers: status.append(line))
    b"".join(body)
    return status[0].split()[0]


def _racing(app: Callable[..., Any], requests: int) -> list[str]:
    """``requests`` conditional creates of one key sent at once: their status codes."""
    statuses: list[str] = []
    threads = [
        threading.Thread(
            target=lambda: statuses.append(_call(app, "PUT", HTTP_IF_NONE_MATCH="*")),
            name=f"writer-{n}",
        )
        for n in range(requests)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return sorted(statuses)


def test_conditional_creates_of_one_key_have_one_winner():
    store: dict[str, bytes] = {}
    app = AtomicConditionalWrites(_check_then_write(store, threading.Event()))
    assert _racing(app, 4) == ["200", "412", "412", "412"]


def test_the_stand_in_races_without_it():
    """The check above can fail: without the middleware, every create wins."""
    store: dict[str, bytes] = {}
    assert _racing(_check_then_write(store, threading.Event()), 4) == ["200"] * 4


def test_other_requests_pass_a_conditional_write_in_progress():
    """A GET is served while a conditional write waits (the stand-in's write waits for it)."""
    store: dict[str, bytes] = {}
    wrote = threading.Event()
    app = AtomicConditionalWrites(_check_then_write(store, wrote, WAIT_FOR_GET_SECONDS))
    writer = threading.Thread(target=_call, args=(app, "PUT"), kwargs={"HTTP_IF_NONE_MATCH": "*"})
    writer.start()
    time.sleep(CHECK_TO_WRITE_SECONDS / 5)
    started = time.monotonic()
    assert _call(app, "GET") == "200"
    writer.join(10)
    assert time.monotonic() - started < WAIT_FOR_GET_SECONDS / 2
    assert "/bucket/key" in store
