"""The one validation layer for the arguments of ckptstore's public constructors and methods.

Every public entry point checks its arguments here before it does anything else (and before
any I/O), so a bad argument always comes out as one of ``ckptstore.errors``' typed errors,
never as an ``AttributeError``, a ``MemoryError`` or a file-system surprise:

=========================  ==================================  =====================
what is wrong              error                               built-in base(s)
=========================  ==================================  =====================
``None``                   ``MissingArgumentError``            ``TypeError``
wrong type                 ``InvalidArgumentTypeError``        ``ValueError``, ``TypeError``
number out of range        ``ArgumentOutOfRangeError``         ``ValueError``
unusable path or URL       ``InvalidPathError``                ``ValueError``
bad storage configuration  ``ConfigurationError``              ``ValueError``
=========================  ==================================  =====================

Each message names the argument, the rejected value (through ``ckptstore.redaction``, so a
credential in a URL is never shown) and what is accepted; the error also carries them as
attributes ``argument``, ``value`` and ``accepted``. Booleans are never accepted as integers
(``True`` is an ``int`` to Python, never a sensible id or size).

Ranges follow Flink's Java types, so that what the reference accepts, Flink can read:
checkpoint and savepoint ids are non-negative Java longs (``0 .. 2**63 - 1``); sizes are Java
ints. Beyond Flink: the write buffer is allocated as it fills, so it is capped at
:data:`MAX_WRITE_BUFFER_SIZE`; URLs are capped at :data:`MAX_URL_LENGTH` characters.

This module does no I/O and imports only the standard library and ``ckptstore``'s ``errors``
and ``redaction`` (``ckptstore.api`` only inside functions), so ``ckptstore.api`` can use it.
"""

from __future__ import annotations

import datetime
import math
import operator
import os
import re
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from ckptstore.errors import (
    ArgumentOutOfRangeError,
    ConfigurationError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidHandleError,
    InvalidPathError,
    MissingArgumentError,
)
from ckptstore.redaction import redact

if TYPE_CHECKING:
    from ckptstore.api import (
        CheckpointedStateScope,
        CheckpointStorageLocationReference,
        JobID,
        StreamStateHandle,
    )

__all__ = [
    "JAVA_INT_MAX",
    "JAVA_LONG_MAX",
    "MAX_ENTROPY_LENGTH",
    "MAX_URL_LENGTH",
    "MAX_WRITE_BUFFER_SIZE",
    "RETRY_BUDGET_LIMITS",
    "describe",
    "require_bool",
    "require_bytes",
    "require_checkpoint_id",
    "require_duration",
    "require_file_name",
    "require_handle",
    "require_handles",
    "require_int",
    "require_job_id",
    "require_reference",
    "require_scheme_names",
    "require_scope",
    "require_storage_options",
    "require_str",
    "require_url_text",
]

#: Java's ``Long.MAX_VALUE``: the largest checkpoint id Flink can store.
JAVA_LONG_MAX = 2**63 - 1
#: Java's ``Integer.MAX_VALUE``: the largest size Flink's int settings can hold.
JAVA_INT_MAX = 2**31 - 1
#: The largest write buffer (64 MiB). The buffer grows as state is written, one per stream;
#: more than a few MiB only delays the spill (the file system buffers its own blocks).
MAX_WRITE_BUFFER_SIZE = 64 * 1024 * 1024
#: The longest entropy (E2 has no maximum; an S3 key has at most 1024 bytes).
MAX_ENTROPY_LENGTH = 64
#: The longest URL or path accepted anywhere (Linux PATH_MAX).
MAX_URL_LENGTH = 4096
#: Accepted ranges of the retry-budget options in ``storage_options`` (S3): see
#: ``ckptstore.stores.retry.retry_budget``.
RETRY_BUDGET_LIMITS: Mapping[str, tuple[float, float]] = {
    "retry_attempts": (1, 20),
    "retry_seconds": (0, 3600),  # exclusive of 0
    "retries": (1, 10),
    "connect_timeout": (0.1, 120),
    "read_timeout": (0.1, 3600),
    "max_attempts": (0, 10),
}

_T = TypeVar("_T")
_SCHEME_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*$")
# C0 controls and DEL: never part of a path (NUL breaks every OS call; newlines forge logs)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def describe(value: object) -> str:
    """A short, redacted description of a rejected value for messages: repr and type."""
    try:
        shown = redact(value)
        # objects and bytes come back as a placeholder such as '<Session>': shown as is
        text = shown if isinstance(shown, str) and not isinstance(value, str) else repr(shown)
    except Exception:  # a hostile __repr__ or __eq__ must not replace the real error
        text = "<unprintable>"
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} ({type(value).__name__})"


def _fail(
    cls: type[InvalidArgumentError] | type[MissingArgumentError],
    message: str,
    argument: str,
    value: object,
    accepted: str,
) -> Exception:
    error = cls(message)
    error.argument = argument  # type: ignore[union-attr]
    error.value = describe(value)  # type: ignore[union-attr]
    error.accepted = accepted  # type: ignore[union-attr]
    return error


def _missing(argument: str, accepted: str) -> Exception:
    return _fail(
        MissingArgumentError,
        f"{argument} must not be None; expected {accepted}",
        argument,
        None,
        accepted,
    )


def _wrong_type(argument: str, value: object, accepted: str) -> Exception:
    return _fail(
        InvalidArgumentTypeError,
        f"{argument} must be {accepted}, got {describe(value)}",
        argument,
        value,
        accepted,
    )


def _as_int(value: Any) -> int | None:
    """``value`` as an int if it is an integer (``__index__``) but not a bool, else ``None``."""
    if isinstance(value, bool | float | str | bytes):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def require_int(
    value: Any,
    setting: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    error: type[InvalidArgumentError] = ArgumentOutOfRangeError,
    range_message: str | None = None,
    below_message: str | None = None,
) -> int:
    """Return ``value`` if it is an integer (not a ``bool``) within the bounds.

    ``None`` raises ``MissingArgumentError``; a wrong type ``InvalidArgumentTypeError``; a
    value out of bounds raises ``error`` (default ``ArgumentOutOfRangeError``) with a message
    naming the setting, the value and the range. Where Flink has its own wording,
    ``range_message`` replaces it for any value out of bounds, ``below_message`` only for a
    value below ``minimum``.
    """
    if minimum is not None and maximum is not None:
        allowed = f"an integer in [{minimum}, {maximum}]"
    elif minimum is not None:
        allowed = f"an integer >= {minimum}"
    elif maximum is not None:
        allowed = f"an integer <= {maximum}"
    else:
        allowed = "an integer"
    if value is None:
        raise _missing(setting, allowed)
    number = _as_int(value)
    if number is None:
        raise _wrong_type(setting, value, allowed)
    generic = f"{setting} must be {allowed}, got {number}"
    if minimum is not None and number < minimum:
        message = below_message or range_message or generic
        raise _fail(error, message, setting, number, allowed)
    if maximum is not None and number > maximum:
        raise _fail(error, range_message or generic, setting, number, allowed)
    return number


def require_bool(value: Any, setting: str) -> bool:
    """Return ``value`` if it is a ``bool``; ``None``, ``"no"``, ``0`` and the like are refused."""
    if value is None:
        raise _missing(setting, "True or False")
    if not isinstance(value, bool):
        raise _wrong_type(setting, value, "True or False")
    return value


def require_str(
    value: Any, setting: str, *, allow_empty: bool = False, max_length: int | None = None
) -> str:
    """Return ``value`` if it is a ``str`` (non-blank unless ``allow_empty``)."""
    if value is None:
        raise _missing(setting, "a string")
    if not isinstance(value, str):
        raise _wrong_type(setting, value, "a string")
    if not allow_empty and not value.strip():
        raise _fail(
            InvalidArgumentError,
            f"{setting} must not be empty or blank, got {value!r}",
            setting,
            value,
            "a non-blank string",
        )
    if max_length is not None and len(value) > max_length:
        raise _fail(
            InvalidArgumentError,
            f"{setting} must have at most {max_length} characters, got {len(value)}",
            setting,
            value,
            f"at most {max_length} characters",
        )
    return value


def require_checkpoint_id(value: Any, setting: str = "checkpoint_id") -> int:
    """A checkpoint (or savepoint) id: an integer in ``[0, 2**63 - 1]`` (ACC6, Java long).

    A negative id raises Flink's "Illegal negative checkpoint id: <id>." (ACC6, MEM3).
    """
    accepted = f"an integer in [0, {JAVA_LONG_MAX}] (a non-negative Java long)"
    number = require_int(value, setting)
    if number < 0:
        raise _fail(
            ArgumentOutOfRangeError,
            f"Illegal negative checkpoint id: {number}.",
            setting,
            number,
            accepted,
        )
    if number > JAVA_LONG_MAX:
        raise _fail(
            ArgumentOutOfRangeError,
            f"{setting} must be {accepted}, got {number}",
            setting,
            number,
            accepted,
        )
    return number


def require_duration(value: Any, setting: str) -> float:
    """A non-negative, finite duration in seconds: a number or a ``datetime.timedelta``."""
    accepted = "a non-negative number of seconds or a datetime.timedelta"
    if value is None:
        raise _missing(setting, accepted)
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise _wrong_type(setting, value, accepted)
    else:
        seconds = float(value)
    if not math.isfinite(seconds) or seconds < 0:
        raise _fail(
            ArgumentOutOfRangeError,
            f"{setting} must be {accepted}, got {value!r}",
            setting,
            value,
            accepted,
        )
    return seconds


def require_bytes(value: Any, setting: str = "data") -> memoryview:
    """A bytes-like argument (``bytes``, ``bytearray``, ``memoryview``) as a byte view."""
    if value is None:
        raise _missing(setting, "a bytes-like object")
    if not isinstance(value, bytes | bytearray | memoryview):
        raise _wrong_type(setting, value, "a bytes-like object (bytes, bytearray, memoryview)")
    try:
        return memoryview(value).cast("B")
    except (TypeError, ValueError) as exc:  # a non-contiguous or odd-format memoryview
        raise _wrong_type(setting, value, "a contiguous bytes-like object") from exc


def require_url_text(value: Any, setting: str) -> str:
    """A path or URL argument as text: ``str`` or ``os.PathLike`` of ``str``.

    Refused: ``bytes`` (encode it yourself: the reference will not guess an encoding), text
    with control characters (NUL, newlines...) or lone surrogates (not UTF-8), and text longer
    than :data:`MAX_URL_LENGTH`. Empty text is left to the caller (Flink has its own
    messages for it).
    """
    accepted = "a URL or path string"
    if value is None:
        raise _missing(setting, accepted)
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise _wrong_type(setting, value, accepted)
    if len(value) > MAX_URL_LENGTH:
        raise _fail(
            InvalidPathError,
            f"{setting} is {len(value)} characters long; at most {MAX_URL_LENGTH} are accepted",
            setting,
            value,
            f"at most {MAX_URL_LENGTH} characters",
        )
    if _CONTROL.search(value):
        raise _fail(
            InvalidPathError,
            f"{setting} contains a control character (NUL, newline, ...): {describe(value)}",
            setting,
            value,
            "text without control characters",
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _fail(
            InvalidPathError,
            f"{setting} is not valid UTF-8 text: {describe(value)}",
            setting,
            value,
            "UTF-8 encodable text",
        ) from exc
    return value


def require_file_name(value: Any, setting: str = "relative_path") -> str:
    """One file name inside a directory: no ``/`` or ``\\``, not ``.``/``..``, no control
    characters, at most 255 characters. Anything else raises ``InvalidHandleError``."""
    accepted = "a single file name (no '/', '\\', '.', '..' or control characters)"
    if value is None:
        raise _missing(setting, accepted)
    if not isinstance(value, str):
        raise _wrong_type(setting, value, accepted)
    if (
        value in ("", ".", "..")
        or "/" in value
        or "\\" in value
        or _CONTROL.search(value)
        or len(value) > 255
    ):
        raise _fail(
            InvalidHandleError,
            f"relative state path {value!r} is not a single file name inside the "
            "checkpoint directory",
            setting,
            value,
            accepted,
        )
    return value


def require_job_id(value: Any, setting: str = "job_id") -> JobID:
    """A ``JobID``, or its 32-hex-character string form."""
    from ckptstore.api import JobID

    if value is None:
        raise _fail(MissingArgumentError, "jobId must not be None", setting, None, "a JobID")
    if isinstance(value, str):
        return JobID.from_hex(value)
    if not isinstance(value, JobID):
        raise _wrong_type(setting, value, "a ckptstore.api.JobID or 32 hex characters")
    return value


def require_scope(value: Any, setting: str = "scope") -> CheckpointedStateScope:
    """A ``CheckpointedStateScope`` member (its plain string value is not one: S17)."""
    from ckptstore.api import CheckpointedStateScope

    accepted = "CheckpointedStateScope.EXCLUSIVE or CheckpointedStateScope.SHARED"
    if value is None:
        raise _missing(setting, accepted)
    if not isinstance(value, CheckpointedStateScope):
        raise _fail(
            InvalidArgumentTypeError,
            f"Unknown state scope: {describe(value)}; expected {accepted}",
            setting,
            value,
            accepted,
        )
    return value


def require_reference(value: Any, setting: str = "reference") -> CheckpointStorageLocationReference:
    """A ``CheckpointStorageLocationReference``."""
    from ckptstore.api import CheckpointStorageLocationReference

    accepted = "a CheckpointStorageLocationReference"
    if value is None:
        raise _missing(setting, accepted)
    if not isinstance(value, CheckpointStorageLocationReference):
        raise _wrong_type(setting, value, accepted)
    return value


_HANDLE_METHODS = ("open_input_stream", "as_bytes_if_in_memory", "discard_state")


def require_handle(value: Any, setting: str = "handle") -> StreamStateHandle:
    """A state handle: an object with ``state_size`` and the handle methods (duck-typed).

    A handle that names a file must name it by a string (``file_path``), and a relative
    handle's ``relative_path`` must be one file name (``require_file_name``); anything else
    is an ``InvalidHandleError`` (a handle unpickled from a hostile ``_metadata`` may carry
    ``../..``).
    """
    accepted = "a state handle (StreamStateHandle)"
    if value is None:
        raise _missing(setting, accepted)
    try:
        size = getattr(value, "state_size", None)
        methods = all(callable(getattr(value, name, None)) for name in _HANDLE_METHODS)
        file_path = getattr(value, "file_path", None)
        relative = getattr(value, "relative_path", None)
    except Exception as exc:  # a hostile property: not a usable handle
        raise _wrong_type(setting, value, accepted) from exc
    if _as_int(size) is None or not methods:
        raise _wrong_type(setting, value, accepted)
    if file_path is not None and not isinstance(file_path, str):
        raise _fail(
            InvalidHandleError,
            f"{setting} names its file by {describe(file_path)}, not by a URL string",
            setting,
            value,
            accepted,
        )
    if relative is not None and not isinstance(relative, str):
        raise _fail(
            InvalidHandleError,
            f"{setting} has a relative path {describe(relative)}, not a file name string",
            setting,
            value,
            accepted,
        )
    if relative is not None:
        require_file_name(relative, f"{setting}.relative_path")
    return value  # type: ignore[no-any-return]


def require_handles(value: Any, setting: str = "handles") -> list[StreamStateHandle]:
    """A sequence of state handles (not a string or bytes), each checked by ``require_handle``."""
    accepted = "a sequence of state handles"
    if value is None:
        raise _missing(setting, accepted)
    if isinstance(value, str | bytes | bytearray | Mapping) or not isinstance(
        value, Sequence | Collection
    ):
        raise _wrong_type(setting, value, accepted)
    items = list(value)
    return [require_handle(item, f"{setting}[{index}]") for index, item in enumerate(items)]


def require_scheme_names(value: Any, setting: str = "allowed_schemes") -> tuple[str, ...]:
    """URL scheme names (a string or a collection of strings), lower-cased, ``:``/``//`` cut.

    ``None`` as a whole means "none"; ``None`` or a non-string inside, an empty name or a
    name that is no URL scheme (RFC 3986) is refused. Whether a file system serves the
    scheme is checked by ``ckptstore.stores.registry`` (fsspec's registry).
    """
    accepted = "URL scheme names such as 'file', 's3' or 'memory'"
    if value is None:
        return ()
    if isinstance(value, str):
        value = (value,)
    if isinstance(value, bytes | bytearray | Mapping) or not isinstance(value, Collection):
        raise _wrong_type(setting, value, accepted)
    names: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise _wrong_type(f"{setting} entry", item, accepted)
        name = item.strip().rstrip("/").rstrip(":")
        if not _SCHEME_NAME.match(name) or len(name) > 32:
            raise _fail(
                ConfigurationError,
                f"{setting}: {describe(item)} is not a URL scheme name; expected {accepted}",
                setting,
                item,
                accepted,
            )
        names.append(name.lower())
    return tuple(names)


def require_storage_options(value: Any, setting: str = "storage_options") -> dict[str, Any]:
    """fsspec ``storage_options``: a mapping with string keys (``None``: no options).

    The retry-budget options are range-checked (:data:`RETRY_BUDGET_LIMITS`): the reference's
    storage-agnostic ``retry_attempts`` (requests per operation, an integer) and
    ``retry_seconds`` (seconds per public call, more than 0), ``retries`` (s3fs's own retry
    loop), and in ``config_kwargs`` botocore's ``connect_timeout``, ``read_timeout`` and
    ``retries['max_attempts']``. An ``endpoint_url`` (also in
    ``client_kwargs``) must be an ``http``/``https`` URL with a host, and
    ``allow_unconditional_metadata`` a bool. Violations raise ``ConfigurationError`` at
    construction, instead of a client error at the first request.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _wrong_type(setting, value, "a mapping of fsspec options")
    for key in value:
        if not isinstance(key, str):
            raise _wrong_type(f"{setting} key", key, "option names as strings")
    options = dict(value)
    _check_retry_budget(options, setting)
    _check_client_options(options, setting)
    _check_flags(options, setting)
    return options


#: The reference's own boolean ``storage_options`` keys (``ckptstore.stores.s3``).
_FLAG_OPTIONS = ("allow_unconditional_metadata",)


def _check_flags(options: Mapping[str, Any], setting: str) -> None:
    """The reference's boolean keys: ``True``, ``False`` or ``None`` (unset), nothing else."""
    for name in _FLAG_OPTIONS:
        value = options.get(name)
        if value is not None and not isinstance(value, bool):
            shown = f"{setting}['{name}']"
            raise _fail(
                ConfigurationError,
                f"{shown} must be True or False, got {describe(value)}",
                setting,
                value,
                "True or False",
            )


def _check_retry_budget(options: Mapping[str, Any], setting: str) -> None:
    """The storage-agnostic retry budget (the suite's retry-budget options, BAD-9)."""
    if options.get("retry_attempts") is not None:
        _budget_number(
            options["retry_attempts"],
            f"{setting}['retry_attempts']",
            "retry_attempts",
            integer=True,
        )
    if options.get("retry_seconds") is not None:
        _budget_number(options["retry_seconds"], f"{setting}['retry_seconds']", "retry_seconds")


def _check_client_options(options: Mapping[str, Any], setting: str) -> None:
    """s3fs's and botocore's own keys: endpoints, ``client_kwargs``, ``config_kwargs``."""
    _endpoint(options.get("endpoint_url"), f"{setting}['endpoint_url']")
    client = _optional_mapping(options, "client_kwargs", f"{setting}['client_kwargs']", setting)
    if client is not None:
        _endpoint(client.get("endpoint_url"), f"{setting}['client_kwargs']['endpoint_url']")
    if "retries" in options:
        _budget_number(options["retries"], f"{setting}['retries']", "retries", integer=True)
    config = _optional_mapping(options, "config_kwargs", f"{setting}['config_kwargs']", setting)
    if config is None:
        return
    for name in ("connect_timeout", "read_timeout"):
        if name in config:
            _budget_number(config[name], f"{setting}['config_kwargs']['{name}']", name)
    retries = _optional_mapping(
        config, "retries", f"{setting}['config_kwargs']['retries']", setting
    )
    if retries is None:
        return
    for name in ("max_attempts", "total_max_attempts"):
        if name in retries:
            _budget_number(
                retries[name],
                f"{setting}['config_kwargs']['retries']['{name}']",
                "max_attempts",
                integer=True,
            )


def _optional_mapping(
    options: Mapping[str, Any], key: str, shown: str, setting: str
) -> Mapping[str, Any] | None:
    """``options[key]``: ``None`` when absent or ``None``, else a mapping (ConfigurationError)."""
    value = options.get(key)
    if value is not None and not isinstance(value, Mapping):
        raise _fail(
            ConfigurationError,
            f"{shown} must be a mapping, got {describe(value)}",
            setting,
            value,
            "a mapping",
        )
    return value


def _endpoint(value: Any, setting: str) -> None:
    if value is None:
        return
    accepted = "an http:// or https:// URL with a host"
    if not isinstance(value, str):
        raise _fail(
            ConfigurationError,
            f"{setting} must be {accepted}, got {describe(value)}",
            setting,
            value,
            accepted,
        )
    try:
        parts = urlsplit(value.strip())
        host = parts.hostname
        parts.port  # noqa: B018 (raises ValueError for a bad port)
    except ValueError:
        host = None
        parts = None
    if (
        parts is None
        or parts.scheme.lower() not in ("http", "https")
        or not host
        or (_CONTROL.search(value))
    ):
        raise _fail(
            ConfigurationError,
            f"{setting} must be {accepted}, got {describe(value)}",
            setting,
            value,
            accepted,
        )


def _budget_number(value: Any, setting: str, kind: str, *, integer: bool = False) -> float:
    low, high = RETRY_BUDGET_LIMITS[kind]
    open_low = kind == "retry_seconds"  # more than 0: no budget at all is no budget
    accepted = (
        f"{'an integer' if integer else 'a number'} in {'(' if open_low else '['}{low:g}, {high:g}]"
    )
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (integer and not isinstance(value, int))
    ):
        raise _fail(
            ConfigurationError,
            f"{setting} must be {accepted}, got {describe(value)}",
            setting,
            value,
            accepted,
        )
    above_low = value > low if open_low else value >= low
    if not (math.isfinite(value) and above_low and value <= high):
        raise _fail(
            ConfigurationError,
            f"{setting} must be {accepted}, got {value!r}",
            setting,
            value,
            accepted,
        )
    return float(value)
