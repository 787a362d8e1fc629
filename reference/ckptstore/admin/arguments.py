"""Command-line arguments every ``ckptstore`` subcommand shares, and how failures exit.

``--storage-option KEY=VALUE`` (repeatable) passes fsspec options to the store of the path the
command is given (an S3 ``endpoint_url``, ``key``, ``secret``; :func:`parse_storage_options`:
a VALUE that starts with ``{`` or ``[`` is JSON, ``true``/``false`` a boolean, any other text
as it is, so a secret of digits stays a string);
fsspec's usual configuration (``FSSPEC_S3_ENDPOINT_URL``, ``FSSPEC_CONFIG_DIR``...) applies
below them. ``--moved-from URL`` says where a tree was written when it lies elsewhere now.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from ckptstore.redaction import redact_text

__all__ = [
    "EXIT_OK",
    "EXIT_PROBLEM",
    "EXIT_USAGE",
    "add_moved_from",
    "add_storage_options",
    "fail",
    "parse_storage_options",
    "storage_options",
]

EXIT_OK = 0
#: a checkpoint is not intact (or a deletion broke one)
EXIT_PROBLEM = 1
#: argparse's code for usage errors; also a root or pointer that cannot be reached
EXIT_USAGE = 2


def add_storage_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an fsspec option of the store (repeatable), e.g. endpoint_url=http://..., "
        "key=..., secret=...; a VALUE starting with { or [ is JSON, true/false booleans",
    )


def add_moved_from(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--moved-from",
        metavar="URL",
        help="where the tree was written (a copied bucket, an unpacked fixture): absolute "
        "references into URL are read below the given path instead",
    )


def parse_storage_options(items: Sequence[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` items as fsspec options (module docstring). Raises ``ValueError`` naming
    a malformed item."""
    options: dict[str, Any] = {}
    for item in items or ():
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--storage-option expects KEY=VALUE, got {redact_text(item)!r}")
        value: Any = text
        if text[:1] in ("{", "["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"--storage-option {key.strip()}: not JSON ({exc})") from exc
        elif text.lower() in ("true", "false"):
            value = text.lower() == "true"
        options[key.strip()] = value
    return options


def storage_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """The ``--storage-option`` values as a dict (a malformed one is a usage error)."""
    try:
        return parse_storage_options(args.storage_option)
    except ValueError as exc:
        parser.error(str(exc))


def fail(command: str, exc: BaseException, code: int = EXIT_USAGE) -> int:
    """Print ``exc`` as one line on stderr (its type, its redacted message) and return
    ``code``."""
    message = " ".join(redact_text(str(exc), limit=600).split())
    print(f"ckptstore {command}: {type(exc).__name__}: {message}", file=sys.stderr)
    return code
