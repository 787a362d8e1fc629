"""The S3 retry budget, in one place: how long a request to S3 keeps trying.

Keys
----
How long an operation may keep trying is set by documented ``storage_options`` keys, all with
bounded defaults (:data:`S3_DEFAULTS`) and range-checked by
``ckptstore.validation.require_storage_options``. The two storage-agnostic keys come first (the
conformance target's options of the same names become them; local and memory I/O is not
retried and ignores them, as do other file systems, whose clients never see them); when either
is set it replaces s3fs's ``retries`` and botocore's ``config_kwargs['retries']``, and
``retry_seconds`` caps ``read_timeout`` (:func:`apply_retry_budget`):

==========================================  ========  ===========================================
key                                         default   meaning
==========================================  ========  ===========================================
``retry_attempts``                          (3)       requests per operation (int in [1, 20]):
                                                      the first attempt and its retries, all
                                                      botocore's (its standard mode's
                                                      decisions and backoff)
``retry_seconds``                           (none)    seconds per public call (in (0, 3600]):
                                                      read timeout at most ``retry_seconds``,
                                                      no retry whose backoff would end beyond
                                                      it, and a deadline that cancels a
                                                      request when the call has spent them (it
                                                      fails with a ``TimeoutError``); no
                                                      request is sent after that
``retries``                                 1         s3fs's own retry loop: one pass, so it
                                                      never multiplies botocore's attempts
``config_kwargs['connect_timeout']``        2 s       botocore: wait for a TCP connection
``config_kwargs['retries']``                (none)    botocore's own retries: replace the
                                                      reference's policy (:func:`policy_of`)
``config_kwargs['read_timeout']``           20 s      botocore: wait for response bytes
==========================================  ========  ===========================================

An *operation* is one S3 API call (a PutObject, one UploadPart, a HeadObject...): closing a
file-backed state stream is one operation below the multipart threshold, and more where it
fails (a HeadObject asks whether the upload committed, a delete removes what it left).
``retry_seconds`` bounds a public call of the storage as a whole (``close_and_get_handle``,
``dispose_storage_location``, a ``read``...: ``ckptstore.calls``), every request it sends
and every transfer included: set it above the time the longest call takes (the last parts of
a large upload, the deletes of a large disposal). A call whose budget is spent fails without
the cleanup requests it could not send; what they would have removed is a crash leftover
(``ckptstore.filesystem.leftovers``).

What is retried
---------------
Retried, with botocore's exponential backoff with jitter (at most ``2**n`` s before retry
``n + 1``): throttling (S3's 503 SlowDown and the other throttling codes), 5xx answers,
timeouts and dropped connections. Not retried: 4xx answers (access denied, a failed
precondition...). A dropped keep-alive connection may be re-sent once by aiohttp itself,
below botocore. The budget's handler (:func:`install_budget`, put in place by
``ckptstore.stores.budgeted_s3``) replaces botocore's own.

Worst cases
-----------
Without the two keys, :data:`DEFAULT_POLICY`: a request is sent at most 3 times (botocore's
standard mode, backoff at most 1 s and 2 s), so an operation under a persistent server fault
fails in a few seconds; but throttling answers get up to 10 requests within 10 s of the public
call's start, because S3 throttles a key prefix for a second or two and a checkpoint's tasks
write into the same prefix at once (S3A retries throttling separately for the same reason).
An *unreachable* endpoint (refused, unresolvable, connect timeout) fails within ``3 *
connect_timeout`` plus backoff: about 9 s; an endpoint that accepts connections but never
answers within ``3 * read_timeout`` plus backoff (about a minute; set ``retry_seconds`` for
less). Retries configured for botocore itself (``config_kwargs['retries']``, or
``AWS_MAX_ATTEMPTS``/``AWS_RETRY_MODE`` in the environment) keep botocore's own handler.
:func:`retry_budget` computes these worst cases (:class:`RetryBudget`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ckptstore.calls import call_started
from ckptstore.stores.protocol import RETRY_ATTEMPTS, RETRY_SECONDS, configured_options

__all__ = [
    "DEFAULT_POLICY",
    "DEFAULT_RETRY_ATTEMPTS",
    "RETRY_ATTEMPTS",
    "RETRY_SECONDS",
    "S3_DEFAULTS",
    "RetryBudget",
    "RetryPolicy",
    "apply_retry_budget",
    "call_budget_left",
    "install_budget",
    "policy_of",
    "retry_budget",
    "s3_client_options",
    "with_environment_retries",
]

#: Requests per operation without ``retry_attempts`` (botocore's standard mode default).
DEFAULT_RETRY_ATTEMPTS = 3
_STARTED = "ckptstore_started"
_BUDGET_ID = "ckptstore-retry-budget"

#: Bounded S3 defaults, used unless the storage options or fsspec's configuration set them:
#: ``retries`` is s3fs's own retry loop (the reference applies it to the instance; s3fs takes
#: it as a class attribute, default 5): one pass, so botocore alone retries and the attempts
#: are not multiplied; ``config_kwargs`` go to botocore: a 2 s connect timeout and a 20 s read
#: timeout (botocore's own is 60 s). The retries are the reference's policy
#: (:func:`policy_of`: 3 attempts). A connection-refused endpoint then fails in about
#: 1-3 s; one that drops packets within about 3 x 2 s plus backoff (:func:`retry_budget`).
S3_DEFAULTS: Mapping[str, Any] = {
    "use_listings_cache": False,
    "retries": 1,
    "config_kwargs": {
        "connect_timeout": 2,
        "read_timeout": 20,
    },
}


def apply_retry_budget(options: dict[str, Any]) -> None:
    """What ``retry_attempts``/``retry_seconds`` change in S3 ``options`` besides the retry
    policy (:func:`policy_of`), in place; :func:`s3_client_options` has completed
    ``options`` with its defaults.

    s3fs's retry loop makes one pass, and with ``retry_seconds`` botocore's read timeout is at
    most that: the deadline of :class:`ckptstore.stores.budgeted_s3.BudgetedS3FileSystem` ends the
    call, but s3fs reads a GetObject's body after the call returned. A key set to ``None``
    goes; the others stay in ``options`` (``ckptstore.stores.s3.instantiate`` reads them). The
    environment's retry settings for botocore join ``config_kwargs``
    (:func:`with_environment_retries`).
    """
    options["config_kwargs"] = with_environment_retries(options["config_kwargs"])
    for name in (RETRY_ATTEMPTS, RETRY_SECONDS):
        if options.get(name) is None:
            options.pop(name, None)
    if RETRY_ATTEMPTS not in options and RETRY_SECONDS not in options:
        return
    options["retries"] = 1
    seconds = options.get(RETRY_SECONDS)
    if seconds is not None:
        config = dict(options["config_kwargs"])
        config["read_timeout"] = min(float(config["read_timeout"]), float(seconds))
        options["config_kwargs"] = config


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """What :class:`_BudgetRetryHandler` allows one operation (one S3 API call)."""

    #: requests for any retryable failure (the first attempt included)
    attempts: int
    #: the deadline of a public call, all of its requests (``None``: none)
    seconds: float | None = None
    #: requests while the server throttles (``None``: ``attempts``)
    throttle_attempts: int | None = None
    #: how long throttling answers are retried (``None``: ``seconds``)
    throttle_seconds: float | None = None


#: The default budget: 3 requests for any failure, but throttling answers (S3's 503 SlowDown:
#: a prefix over its request rate, which recovers within a second or two) up to 10 requests
#: within 10 s of the public call's start, so a throttled checkpoint completes (S3A has its own
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
        """Remember when the public call of the request started (``ckptstore.calls``); the
        request's own start outside one."""
        if isinstance(context, dict):
            context.setdefault(_STARTED, call_started() or time.monotonic())

    async def needs_retry(self, **kwargs: Any) -> float | None:
        policy = self._policy
        context = self._adapter.create_retry_context(**kwargs)
        limit = policy.seconds
        if not await self._conditions.is_retryable(context):
            extra = policy.throttle_attempts
            if (
                extra is None
                or context.attempt_number >= extra
                or (not self._throttled.is_retryable(context))
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


def call_budget_left(seconds: float) -> float:
    """What is left of ``seconds`` for the running public call (``ckptstore.calls``): all of
    them outside one."""
    started = call_started()
    return seconds if started is None else seconds - (time.monotonic() - started)


def install_budget(client: Any, policy: RetryPolicy | None) -> None:
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


def policy_of(options: Mapping[str, Any]) -> RetryPolicy | None:
    """The retry policy of S3 ``options``.

    ``retry_attempts``/``retry_seconds``: exactly those (throttling answers included).
    Retries the user configured for botocore (``config_kwargs['retries']``, with
    ``AWS_MAX_ATTEMPTS``/``AWS_RETRY_MODE`` of the environment folded in by
    :func:`with_environment_retries`): ``None``, botocore's own handler. Otherwise
    :data:`DEFAULT_POLICY`.
    """
    attempts = options.get(RETRY_ATTEMPTS)
    seconds = options.get(RETRY_SECONDS)
    if attempts is not None or seconds is not None:
        return RetryPolicy(
            attempts=int(attempts) if attempts is not None else DEFAULT_RETRY_ATTEMPTS,
            seconds=None if seconds is None else float(seconds),
        )
    if (options.get("config_kwargs") or {}).get("retries") is not None:
        return None
    return DEFAULT_POLICY


def with_environment_retries(config: Mapping[str, Any]) -> dict[str, Any]:
    """botocore's Config keywords ``config`` with the retry settings of the environment that
    it does not set itself (``AWS_MAX_ATTEMPTS`` as ``total_max_attempts``,
    ``AWS_RETRY_MODE`` as ``mode``), which is how botocore resolves them when it makes a
    client. The options then hold everything the client's retries depend on: the file-system
    cache keys on them, so a storage made after the environment changed gets a client that
    follows it, and :func:`policy_of` reads them without looking at the environment."""
    given = config.get("retries")
    retries = dict(given or {})
    attempts = os.environ.get("AWS_MAX_ATTEMPTS", "").strip()
    if attempts.isdigit() and "max_attempts" not in retries:
        retries.setdefault("total_max_attempts", int(attempts))
    mode = os.environ.get("AWS_RETRY_MODE", "").strip()
    if mode:
        retries.setdefault("mode", mode)
    if given is None and not retries:
        return dict(config)
    return {**config, "retries": retries}


def s3_client_options(options: dict[str, Any]) -> dict[str, Any]:
    """S3 ``options`` (fsspec's configuration updated by the storage's) completed with the
    bounded :data:`S3_DEFAULTS` for whatever neither set, and the budget applied
    (:func:`apply_retry_budget`). The listings cache is off unless asked for: a cached listing
    would hide other processes' writes."""
    for name, value in S3_DEFAULTS.items():
        if name != "config_kwargs":
            options.setdefault(name, value)
    config = dict(options.get("config_kwargs") or {})
    defaults = S3_DEFAULTS["config_kwargs"]
    config.setdefault("connect_timeout", defaults["connect_timeout"])
    config.setdefault("read_timeout", defaults["read_timeout"])
    options["config_kwargs"] = config
    apply_retry_budget(options)
    return options


@dataclass(frozen=True, slots=True)
class RetryBudget:
    """How long S3 requests keep trying, from ``storage_options`` (module docstring)."""

    #: s3fs's retry loop (read timeouts, throttling; not connection failures): 1 by default
    retries: int
    #: botocore's retries after the first attempt (standard mode)
    max_attempts: int
    connect_timeout: float
    read_timeout: float
    #: ``retry_seconds``: the deadline of one public call, all of its requests and retries
    #: included (``None``: none)
    seconds: float | None = None
    #: requests while the server throttles (503 SlowDown), when more than ``attempts``
    throttle_attempts: int | None = None
    #: how long throttling answers are retried (``None``: ``seconds``)
    throttle_seconds: float | None = None

    @property
    def attempts_per_request(self) -> int:
        """botocore's attempts for one request (the first one and its retries)."""
        return self.max_attempts + 1

    @property
    def attempts(self) -> int:
        """Requests one operation sends at most (s3fs's passes times botocore's attempts)."""
        return self.retries * self.attempts_per_request

    def _capped(self, seconds: float) -> float:
        return seconds if self.seconds is None else min(seconds, self.seconds)

    @property
    def unreachable_seconds(self) -> float:
        """Worst case for an unreachable endpoint: botocore's attempts, each a connect
        timeout, plus standard-mode backoff (at most 2**n s after attempt n)."""
        backoff = sum(min(2.0**n, 20.0) for n in range(self.max_attempts))
        return self._capped(self.attempts_per_request * self.connect_timeout + backoff)

    @property
    def failing_seconds(self) -> float:
        """Worst case for an endpoint that answers every request with an error at once
        (a persistent 500 or throttling): the backoff between the attempts."""
        backoff = sum(min(2.0**n, 20.0) for n in range(self.max_attempts))
        s3fs_backoff = sum(min(1.7**n * 0.1, 15.0) for n in range(self.retries))
        return self._capped(self.retries * backoff + s3fs_backoff)

    @property
    def throttled_seconds(self) -> float:
        """Worst case for an endpoint that throttles every request (503 SlowDown)."""
        if self.throttle_attempts is None or self.throttle_attempts <= self.attempts:
            return self.failing_seconds
        backoff = sum(min(2.0**n, 20.0) for n in range(self.throttle_attempts - 1))
        limit = self.throttle_seconds if self.throttle_seconds is not None else self.seconds
        return backoff if limit is None else min(backoff, limit)

    @property
    def unresponsive_seconds(self) -> float:
        """Worst case for an endpoint that accepts connections and never answers."""
        backoff = sum(min(2.0**n, 20.0) for n in range(self.max_attempts))
        s3fs_backoff = sum(min(1.7**n * 0.1, 15.0) for n in range(self.retries))
        per_try = self.attempts_per_request * self.read_timeout + backoff
        return self._capped(self.retries * per_try + s3fs_backoff)


def retry_budget(storage_options: Mapping[str, Any] | None = None) -> RetryBudget:
    """The S3 retry budget that ``storage_options`` give (defaults: :data:`S3_DEFAULTS`).

    The attempts are the retry policy's (:func:`policy_of`); where the user
    configured botocore's own retries instead, botocore's (:func:`_botocore_attempts`).
    """
    options = s3_client_options(configured_options("s3", storage_options))
    config = options["config_kwargs"]
    policy = policy_of(options)
    attempts = policy.attempts if policy is not None else _botocore_attempts(config["retries"])
    return RetryBudget(
        retries=max(1, int(options.get("retries", 1))),
        max_attempts=attempts - 1,
        connect_timeout=float(config["connect_timeout"]),
        read_timeout=float(config["read_timeout"]),
        seconds=None if policy is None else policy.seconds,
        throttle_attempts=None if policy is None else policy.throttle_attempts,
        throttle_seconds=None if policy is None else policy.throttle_seconds,
    )


def _botocore_attempts(retries: Mapping[str, Any]) -> int:
    """The requests per call of botocore's own retries as the user configured them
    (``config_kwargs['retries']``, where :func:`with_environment_retries` has folded
    in the environment's): ``max_attempts`` retries or ``total_max_attempts``, else botocore's
    standard mode's 3."""
    if "max_attempts" in retries:
        return int(retries["max_attempts"]) + 1
    if "total_max_attempts" in retries:
        return max(1, int(retries["total_max_attempts"]))
    return DEFAULT_RETRY_ATTEMPTS
