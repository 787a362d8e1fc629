"""Argument checks shared by the configuration classes and the JobManager storage.

Each check raises a typed error from ``ckptstore.errors`` whose message names the setting,
the rejected value and what is allowed, so that a misconfiguration can be fixed from the
message alone. Booleans are rejected wherever an integer is expected: ``True`` is an ``int``
to Python, but never a sensible checkpoint interval or size.
"""

from __future__ import annotations

from typing import Any

from ckptstore.errors import InvalidArgumentError, MissingArgumentError

__all__ = ["describe", "require_bool", "require_int", "require_str"]


def describe(value: object) -> str:
    """A short description of a rejected value for error messages: repr and type."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} ({type(value).__name__})"


def require_int(
    value: Any,
    setting: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    error: type[InvalidArgumentError] = InvalidArgumentError,
    range_message: str | None = None,
) -> int:
    """Return ``value`` if it is an ``int`` (not a ``bool``) within the bounds.

    ``None`` raises ``MissingArgumentError``; a wrong type raises ``InvalidArgumentError``; a
    value out of bounds raises ``error`` with ``range_message`` (or a generated message).
    """
    if value is None:
        raise MissingArgumentError(f"{setting} must not be None; expected an integer")
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{setting} must be an integer, got {describe(value)}")
    too_small = minimum is not None and value < minimum
    too_large = maximum is not None and value > maximum
    if too_small or too_large:
        if range_message is None:
            if minimum is not None and maximum is not None:
                allowed = f"between {minimum} and {maximum}"
            elif minimum is not None:
                allowed = f">= {minimum}"
            else:
                allowed = f"<= {maximum}"
            range_message = f"{setting} must be {allowed}, got {value}"
        raise error(range_message)
    return int(value)


def require_bool(value: Any, setting: str) -> bool:
    """Return ``value`` if it is a ``bool``; ``None`` and other types are rejected."""
    if value is None:
        raise MissingArgumentError(f"{setting} must not be None; expected True or False")
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{setting} must be True or False, got {describe(value)}")
    return value


def require_str(value: Any, setting: str, *, allow_empty: bool = False) -> str:
    """Return ``value`` if it is a ``str`` (non-blank unless ``allow_empty``)."""
    if value is None:
        raise MissingArgumentError(f"{setting} must not be None; expected a string")
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{setting} must be a string, got {describe(value)}")
    if not allow_empty and not value.strip():
        raise InvalidArgumentError(f"{setting} must not be empty or blank, got {value!r}")
    return value
