"""What the reference does on S3 beyond plain fsspec: the retry budget.

Retry budget
------------
Two storage-agnostic keys in ``storage_options`` bound every request the storage sends to S3
(the conformance target's options ``retry_attempts`` and ``retry_seconds`` become them; local
and memory I/O is not retried and ignores them, as do other file systems):

=================  ==============  ==========================================================
key                accepted        meaning
=================  ==============  ==========================================================
``retry_attempts`` int in [1, 20]  requests per operation: the first attempt and its
                                   retries, all botocore's (standard mode); s3fs's own retry
                                   loop makes a single pass, so it never multiplies them
``retry_seconds``  (0, 3600]       seconds per operation: connect timeout at most
                                   ``retry_seconds / retry_attempts``, read timeout at most
                                   ``retry_seconds``, no retry whose backoff would end beyond
                                   it, and a deadline that cancels the operation when reached
                                   (it fails with a ``TimeoutError``)
=================  ==============  ==========================================================

An *operation* is one S3 API call (a PutObject, one UploadPart, a HeadObject...): closing a
file-backed state stream is one operation below the multipart threshold. ``retry_seconds``
bounds the whole call, transfer included: set it above the time one part takes to upload.
Retried, with botocore's exponential backoff with jitter (at most ``2**n`` s before retry
``n + 1``): throttling (S3's 503 SlowDown and the other throttling codes), 5xx answers,
timeouts and dropped connections. Not retried: 4xx answers (access denied, a failed
precondition...). A dropped keep-alive connection may be re-sent once by aiohttp itself,
below botocore.

Without these keys the bounded defaults of ``ckptstore.filesystems`` apply (``S3_DEFAULTS``:
2 s connect and 20 s read timeout, s3fs's loop one pass) with :data:`DEFAULT_POLICY`: 3
requests for any failure, so a persistent server fault fails within a few seconds; but
throttling answers up to 10 requests within 10 s of the operation's start, because S3
throttles a key prefix for a second or two and a checkpoint's tasks write into the same
prefix at once (S3A retries throttling separately for the same reason). Retries configured
for botocore itself (``config_kwargs['retries']``, ``AWS_MAX_ATTEMPTS``) keep botocore's
own handler. :func:`ckptstore.filesystems.retry_budget` computes the worst cases.

This module is imported by ``ckptstore.filesystems``; s3fs and botocore are imported lazily.
"""

from __future__ import annotations

import asyncio
import errno
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_POLICY",
    "DEFAULT_RETRY_ATTEMPTS",
    "RETRY_ATTEMPTS",
    "RETRY_SECONDS",
    "RetryPolicy",
    "apply_retry_budget",
    "instantiate",
    "policy_of",
]

#: ``storage_options`` key: requests per operation (see the module docstring).
RETRY_ATTEMPTS = "retry_attempts"
#: ``storage_options`` key: seconds per operation (see the module docstring).
RETRY_SECONDS = "retry_seconds"
#: Requests per operation without ``retry_attempts`` (botocore's standard mode default).
DEFAULT_RETRY_ATTEMPTS = 3

_STARTED = "ckptstore_started"
_BUDGET_ID = "ckptstore-retry-budget"


# --------------------------------------------------------------------------- retry budget


def apply_retry_budget(options: dict[str, Any], defaults: Mapping[str, Any]) -> None:
    """Translate ``retry_attempts``/``retry_seconds`` in S3 ``options`` (in place).

    ``defaults`` are the bounded defaults (``config_kwargs`` ``connect_timeout`` and
    ``read_timeout``) for timeouts the options do not set. The two keys stay in ``options``
    (:func:`instantiate` reads them); s3fs's retry loop is set to one pass and botocore's
    standard mode to ``retry_attempts`` attempts.
    """
    attempts = options.get(RETRY_ATTEMPTS)
    seconds = options.get(RETRY_SECONDS)
    if attempts is None and seconds is None:
        options.pop(RETRY_ATTEMPTS, None)
        options.pop(RETRY_SECONDS, None)
        return
    total = int(attempts) if attempts is not None else DEFAULT_RETRY_ATTEMPTS
    config = dict(options.get("config_kwargs") or {})
    config["retries"] = {"total_max_attempts": total, "mode": "standard"}
    connect = float(config.get("connect_timeout", defaults["connect_timeout"]))
    read = float(config.get("read_timeout", defaults["read_timeout"]))
    if seconds is not None:
        connect = min(connect, max(0.05, float(seconds) / total))
        read = min(read, float(seconds))
    config["connect_timeout"] = connect
    config["read_timeout"] = read
    options["config_kwargs"] = config
    options["retries"] = 1
    options[RETRY_ATTEMPTS] = total
    if seconds is None:
        options.pop(RETRY_SECONDS, None)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """What :class:`_BudgetRetryHandler` allows one operation (one S3 API call)."""

    #: requests for any retryable failure (the first attempt included)
    attempts: int
    #: the operation's deadline (``None``: none)
    seconds: float | None = None
    #: requests while the server throttles (``None``: ``attempts``)
    throttle_attempts: int | None = None
    #: how long throttling answers are retried (``None``: ``seconds``)
    throttle_seconds: float | None = None


#: The default budget: 3 requests for any failure, but throttling answers (S3's 503 SlowDown:
#: a prefix over its request rate, which recovers within a second or two) up to 10 requests
#: within 10 s of the operation's start, so a throttled checkpoint completes (S3A has its own
#: throttle retry limit for the same reason).
DEFAULT_POLICY = RetryPolicy(
    attempts=DEFAULT_RETRY_ATTEMPTS, throttle_attempts=10, throttle_seconds=10.0
)


class _BudgetRetryHandler:
    """botocore's standard retry decision and backoff, within a :class:`RetryPolicy`.

    Replaces the client's own ``needs-retry`` handler; ``before-call`` stamps when the
    operation started.
    """

    def __init__(self, policy: RetryPolicy) -> None:
        from aiobotocore.retries.standard import (  # type: ignore[import-untyped]
            AioStandardRetryConditions,
        )
        from botocore.retries.standard import (
            ExponentialBackoff,
            RetryEventAdapter,
            ThrottledRetryableChecker,
        )

        self._adapter = RetryEventAdapter()
        self._conditions = AioStandardRetryConditions(max_attempts=policy.attempts)
        self._throttled = ThrottledRetryableChecker()
        self._backoff = ExponentialBackoff()
        self._policy = policy

    def stamp(self, context: Any = None, **_: Any) -> None:
        if isinstance(context, dict):
            context.setdefault(_STARTED, time.monotonic())

    async def needs_retry(self, **kwargs: Any) -> float | None:
        policy = self._policy
        context = self._adapter.create_retry_context(**kwargs)
        limit = policy.seconds
        if not await self._conditions.is_retryable(context):
            extra = policy.throttle_attempts
            if extra is None or context.attempt_number >= extra or (
                not self._throttled.is_retryable(context)
            ):
                return None
            limit = policy.throttle_seconds if policy.throttle_seconds is not None else limit
        delay = float(self._backoff.delay_amount(context))
        if limit is not None:
            request_context = getattr(context, "request_context", None) or {}
            started = request_context.get(_STARTED)
            if started is not None and time.monotonic() - started + delay >= limit:
                return None  # no time left for another attempt: the last error stands
        return delay


def _install_budget(client: Any, policy: RetryPolicy | None) -> None:
    """Put :class:`_BudgetRetryHandler` in place of ``client``'s retry handler (once)."""
    if policy is None or getattr(client, "_ckptstore_budget", False):
        return
    events = client.meta.events
    service = client.meta.service_model.service_id.hyphenize()
    handler = _BudgetRetryHandler(policy)
    events.unregister(f"needs-retry.{service}", unique_id=f"retry-config-{service}")
    events.register(f"needs-retry.{service}", handler.needs_retry, unique_id=_BUDGET_ID)
    events.register(f"before-call.{service}", handler.stamp, unique_id=f"{_BUDGET_ID}-start")
    client._ckptstore_budget = True


_CLASS_LOCK = threading.Lock()
_BUDGETED_CLASS: type | None = None


def _budgeted_class() -> type:
    """``s3fs.S3FileSystem`` with the retry budget (built on first use: s3fs is optional)."""
    global _BUDGETED_CLASS
    with _CLASS_LOCK:
        if _BUDGETED_CLASS is not None:
            return _BUDGETED_CLASS
        import s3fs
        from fsspec.asyn import sync_wrapper

        class BudgetedS3FileSystem(s3fs.S3FileSystem):  # type: ignore[misc]
            """s3fs whose requests keep to ``retry_attempts`` and ``retry_seconds``."""

            #: the retry policy of every request (``None``: botocore's own handler)
            ckptstore_policy: RetryPolicy | None = None

            async def get_s3(self, bucket: Any = None) -> Any:
                client = await super().get_s3(bucket)
                _install_budget(client, self.ckptstore_policy)
                return client

            async def _call_s3(self, method: Any, *akwarglist: Any, **kwargs: Any) -> Any:
                policy = self.ckptstore_policy
                seconds = None if policy is None else policy.seconds
                call = super()._call_s3(method, *akwarglist, **kwargs)
                if seconds is None:
                    return await call
                deadline = asyncio.timeout(seconds)
                try:
                    async with deadline:
                        return await call
                except TimeoutError as exc:
                    if not deadline.expired():  # a timeout of the request itself
                        raise
                    raise TimeoutError(
                        errno.ETIMEDOUT,
                        f"S3 {method} gave up: retry_seconds={seconds:g} s elapsed",
                    ) from exc

            call_s3 = sync_wrapper(_call_s3)

        _BUDGETED_CLASS = BudgetedS3FileSystem
        return _BUDGETED_CLASS


def policy_of(options: Mapping[str, Any]) -> RetryPolicy | None:
    """The retry policy of S3 ``options`` (as ``ckptstore.filesystems`` completed them).

    ``retry_attempts``/``retry_seconds``: exactly those (throttling answers included).
    Neither, with the default botocore retries: :data:`DEFAULT_POLICY`. Retries the user
    configured for botocore (``config_kwargs['retries']``, ``AWS_MAX_ATTEMPTS``): ``None``,
    botocore's own handler.
    """
    attempts = options.get(RETRY_ATTEMPTS)
    seconds = options.get(RETRY_SECONDS)
    if attempts is not None or seconds is not None:
        return RetryPolicy(
            attempts=int(attempts) if attempts is not None else DEFAULT_RETRY_ATTEMPTS,
            seconds=None if seconds is None else float(seconds),
        )
    config = options.get("config_kwargs") or {}
    if config.get("retries") == {"max_attempts": DEFAULT_RETRY_ATTEMPTS - 1, "mode": "standard"}:
        return DEFAULT_POLICY
    return None


def instantiate(options: Mapping[str, Any]) -> Any:
    """An S3 file system for ``options`` with its retry policy (:func:`policy_of`).

    ``retries`` (s3fs's retry loop) is an attribute of the instance, so the instance is
    private (``skip_instance_cache``).
    """
    kwargs = dict(options)
    policy = policy_of(kwargs)
    retries = kwargs.pop("retries", None)
    kwargs.pop(RETRY_ATTEMPTS, None)
    kwargs.pop(RETRY_SECONDS, None)
    kwargs["skip_instance_cache"] = True
    fs = _budgeted_class()(**kwargs)
    if retries is not None:
        fs.retries = max(1, int(retries))
    fs.ckptstore_policy = policy
    return fs
