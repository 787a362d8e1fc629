"""Secret redaction: the one function behind every ``repr``, error message and log line.

Storage options, endpoint URLs, pointers and client error texts may carry credentials, and
not always under a key that looks secret: the password in ``http://user:pass@host`` (an
endpoint or proxy URL), an ``aws_session_token`` nested in ``client_kwargs``, a presigned
URL's ``X-Amz-Signature`` or an Azure SAS token's ``sig`` in a query string. Everything the
reference shows goes through :func:`redact` (values) or :func:`redact_text` (free text):

* mappings (recursively: ``client_kwargs``, ``config_kwargs``, ``proxies``...): the value of
  every secret-looking key (:func:`is_secret_name`) becomes ``'***'``, whatever its type;
* strings: URL userinfo becomes ``***@`` (``http://***@host:9000``), the value of every
  secret-looking ``name=value`` parameter becomes ``***`` (query strings, SAS tokens, header
  texts such as ``Credential=...,Signature=...``), ``Bearer``/``Basic`` tokens are blanked;
* sequences: element by element; numbers, booleans and ``None`` unchanged; any other object
  (a session, a credentials provider) is shown as ``<TypeName>``, never by its own ``repr``.

:func:`redact_text` also blanks known secret values (from :func:`secret_values` of the options
in use) wherever they occur, for texts written by client libraries. :class:`RedactingFilter`
applies :func:`redact_text` to log records; the reference's own loggers carry it, and users
can attach it to handlers that also receive botocore's or s3fs's debug logs.

Every pattern here runs in time linear in the text (a pointer or argument may be hostile and
long; a backtracking pattern would hold the GIL for minutes on a megabyte). A text longer
than :data:`LONGEST_SHOWN` is not shown at all where only a part of it could be (a message:
:func:`redact_text` with a ``limit``; a value: :func:`redact`), just its length: cutting before
redacting could show the start of a secret, and redacting a megabyte to show 2000 characters
of it is work nobody needs.

This module does no I/O and imports only the standard library.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "LONGEST_SHOWN",
    "REDACTED",
    "SECRET_MARKERS",
    "SECRET_NAMES",
    "RedactingFilter",
    "get_logger",
    "is_secret_name",
    "redact",
    "redact_text",
    "secret_values",
]

#: What a secret is replaced by.
REDACTED = "***"

#: A name containing one of these (any case) names a secret: its value is never shown.
SECRET_MARKERS = (
    "key",
    "secret",
    "token",
    "password",
    "passwd",
    "session",
    "credential",
    "auth",
    "sas",
    "signature",
    "private",
    "cookie",
    "connection_string",
    "connectionstring",
)
#: Short names that are secrets exactly (query parameters: Azure SAS ``sig``, ``pwd``...).
SECRET_NAMES = frozenset({"sig", "pwd", "pass", "pw", "code", "x-amz-credential"})

_MAX_TEXT = 2000
#: The longest text shown in part (see the module docstring); longer ones show their length.
LONGEST_SHOWN = 64 * 1024
# userinfo of a URL, up to the last '@' before the host (passwords may contain '@'). The
# scheme is the whole run of scheme characters before '://': the lookbehind tries it only at
# a run's first character (tried at every character, it would rescan the rest of the run each
# time, quadratic in a long run of letters and digits).
_USERINFO = re.compile(r"(?<![A-Za-z0-9+.\-])(?P<scheme>[A-Za-z0-9+.\-]+://)[^/\s\"'<>?#`]*@")
# 'user:password@host' without a scheme (proxy settings)
_BARE_USERINFO = re.compile(r"^(?P<user>[^@/\s:]+):[^@/\s]*@(?=[^@/\s]+$)")
# name=value in query strings, SAS tokens, header texts and key=value lists
_PARAMETER = re.compile(
    r"(?P<lead>^|[?&;#\s,(\[{\"'])(?P<name>[A-Za-z0-9_.\-]+)(?P<eq>=)"
    r"(?P<value>\"[^\"]*\"|'[^']*'|[^&;\s,\"'#)\]}]*)"
)
# credential-bearing HTTP headers quoted in a client's text: the whole value, to end of line
_HEADER = re.compile(
    r"(?i)(?P<name>\b(?:proxy-)?authorization|\bx-amz-security-token|\bx-api-key|\bcookie)"
    r"(?P<sep>['\"]?\s*:\s*)(?P<value>[^\r\n]+)"
)
# 'name': 'value' items of a mapping's repr quoted in a message
_QUOTED_ITEM = re.compile(
    r"(?P<q1>['\"])(?P<name>[^'\"\s]{1,64})(?P=q1)(?P<sep>\s*:\s*)(?P<q2>['\"])"
    r"(?P<value>[^'\"]*)(?P=q2)"
)
# a URL scheme (RFC 3986), and the authority after '://': up to the first '/' or whitespace
_SCHEME_NAME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
_AUTHORITY = re.compile(r"[^/\s]*")
_SCHEME_AUTH = re.compile(r"(?i)\b(?P<kind>bearer|basic)\s+[A-Za-z0-9._~+/=\-]{4,}")


def is_secret_name(name: object) -> bool:
    """True when an option, parameter or header name looks like it names a secret."""
    lowered = str(name).strip().lower()
    return lowered in SECRET_NAMES or any(marker in lowered for marker in SECRET_MARKERS)


def _redact_parameter(match: re.Match[str]) -> str:
    name = match.group("name")
    if not is_secret_name(name) or not match.group("value"):
        return match.group(0)
    return f"{match.group('lead')}{name}{match.group('eq')}{REDACTED}"


def _redact_quoted_item(match: re.Match[str]) -> str:
    if not is_secret_name(match.group("name")):
        return match.group(0)
    q1, q2 = match.group("q1"), match.group("q2")
    return f"{q1}{match.group('name')}{q1}{match.group('sep')}{q2}{REDACTED}{q2}"


def redact_text(text: object, secrets: Iterable[str] = (), *, limit: int | None = _MAX_TEXT) -> str:
    """``text`` with URL userinfo, secret parameters, auth tokens and ``secrets`` blanked.

    ``secrets`` are literal values (from :func:`secret_values`) to blank wherever they occur;
    values shorter than 4 characters are ignored (they would blank ordinary words). The
    result is cut at ``limit`` characters (``None``: no limit); with a limit, a text longer
    than :data:`LONGEST_SHOWN` is replaced by its length.
    """
    result = str(text)
    if limit is not None and len(result) > LONGEST_SHOWN:
        return _not_shown(result)
    for secret in sorted(
        {s for s in secrets if isinstance(s, str) and len(s) >= 4}, key=len, reverse=True
    ):
        result = result.replace(secret, REDACTED)
    result = _USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", result)
    result = _BARE_USERINFO.sub(lambda m: f"{REDACTED}@", result)
    result = _HEADER.sub(lambda m: f"{m.group('name')}{m.group('sep')}{REDACTED}", result)
    result = _PARAMETER.sub(_redact_parameter, result)
    result = _QUOTED_ITEM.sub(_redact_quoted_item, result)
    result = _SCHEME_AUTH.sub(lambda m: f"{m.group('kind')} {REDACTED}", result)
    if limit is not None and len(result) > limit:
        result = result[:limit] + "..."
    return result


def _not_shown(text: str) -> str:
    return f"<{len(text)} characters, not shown>"


def redact(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of ``value`` that is safe to show (see the module docstring for the rules);
    ``secrets`` are literal values to blank in its strings as :func:`redact_text` does (a
    password the rules cannot find, such as one with an apostrophe in a URL's userinfo)."""
    return _redact(value, 0, tuple(secrets))


def _redact(value: Any, depth: int, secrets: tuple[str, ...]) -> Any:
    if depth > 20:
        return "<...>"
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        if len(value) > LONGEST_SHOWN:
            return _not_shown(value)
        return redact_text(value, secrets, limit=None)
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(value)} bytes>"
    if isinstance(value, Mapping):
        return {
            name: REDACTED if is_secret_name(name) else _redact(item, depth + 1, secrets)
            for name, item in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        items = [_redact(item, depth + 1, secrets) for item in value]
        if isinstance(value, list):
            return items
        if isinstance(value, tuple):
            return tuple(items)
        return items
    return f"<{type(value).__name__}>"


def _url_password(text: str) -> str | None:
    """The password of a URL's ``user:password@`` userinfo (``text`` starts with the URL).

    The userinfo ends at the last ``@`` before the first ``/`` or whitespace after ``://``
    (passwords may hold ``@``); the password follows the first ``:`` before the first ``@``
    (a user name holds no ``:``). A scan, no backtracking pattern: linear in ``text``.
    """
    colon = text.find(":")
    if colon < 1 or not text.startswith("//", colon + 1):
        return None
    if _SCHEME_NAME.fullmatch(text, 0, colon) is None:
        return None
    authority = _AUTHORITY.match(text, colon + 3)
    userinfo = authority.group(0).rpartition("@")[0] if authority else ""
    user, separator, _ = userinfo.partition("@")[0].partition(":")
    if not separator:
        return None
    return userinfo[len(user) + 1 :]


def secret_values(options: Any) -> list[str]:
    """Every string value in ``options`` (recursively) that a secret-looking key names.

    Also the password of URL userinfo in any string value, so that a client library's text
    quoting it in another form is still blanked.
    """
    found: list[str] = []

    def collect(value: Any, secret: bool, depth: int) -> None:
        if depth > 20:
            return
        if isinstance(value, Mapping):
            for name, item in value.items():
                collect(item, secret or is_secret_name(name), depth + 1)
        elif isinstance(value, list | tuple | set | frozenset):
            for item in value:
                collect(item, secret, depth + 1)
        elif isinstance(value, str):
            if secret:
                found.append(value)
            password = _url_password(value)
            if password is not None:
                found.append(password)

    collect(options, False, 0)
    return [value for value in found if len(value) >= 4]


class RedactingFilter(logging.Filter):
    """A logging filter that passes every record through :func:`redact_text`.

    Attach it to a handler (``handler.addFilter(RedactingFilter())``) to scrub the debug logs
    of botocore, s3fs or aiohttp as well; the reference's own loggers carry it already.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self._secrets = tuple(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            if isinstance(record.args, tuple):
                record.args = tuple(redact(arg) for arg in record.args)
            elif isinstance(record.args, Mapping):
                record.args = redact(record.args)
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to logging's own handling
            return True
        record.msg = redact_text(message, self._secrets, limit=None)
        record.args = None
        return True


def get_logger(name: str) -> logging.Logger:
    """The logger ``name`` with a :class:`RedactingFilter` attached (once)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactingFilter) for f in logger.filters):
        logger.addFilter(RedactingFilter())
    return logger
