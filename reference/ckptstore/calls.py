"""When the public call that is running started: what the S3 retry budget is counted from.

``retry_seconds`` bounds a call as the user sees it (``close_and_get_handle``,
``dispose_storage_location``, a ``read``...), however many requests it sends: a close whose
upload timed out must not then spend the whole budget again on each request of its cleanup.
Every public method of the reference that may send requests is a :func:`public_call`: it
records its start in a context variable, unless an outer public call of the same thread did
(a call made inside another one counts against the outer one). The S3 file system reads it
(``ckptstore.stores.budgeted_s3``, ``ckptstore.stores.s3``): a request gets what is left of the
call's budget, and none is sent once it is spent.

A context variable, not a thread-local: fsspec runs the requests as tasks of its event loop
thread, and a task started from a thread (``asyncio.run_coroutine_threadsafe``) runs in a copy
of that thread's context, so the loop sees the start of the call that sent the request.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

__all__ = ["call_started", "public_call"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: ``time.monotonic()`` when the outermost public call of this context started; 0.0: none.
_STARTED: ContextVar[float] = ContextVar("ckptstore_call_started", default=0.0)


def call_started() -> float | None:
    """When the running public call started (``time.monotonic``), ``None`` outside one."""
    return _STARTED.get() or None


def public_call(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Make ``method`` a public call: its requests share one retry budget (module docstring)."""

    @functools.wraps(method)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if _STARTED.get():
            return method(*args, **kwargs)
        token = _STARTED.set(time.monotonic())
        try:
            return method(*args, **kwargs)
        finally:
            _STARTED.reset(token)

    return call
