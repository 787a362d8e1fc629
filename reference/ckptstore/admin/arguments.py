"""Command-line arguments every ``ckptstore`` subcommand shares, and how failures exit.

``--storage-option KEY=VALUE`` (repeatable) passes fsspec options to the store of the path the
command is given (an S3 ``endpoint_url``, ``key``, ``secret``; a VALUE that is JSON, such as
``true``, ``3`` or ``{"region_name": "eu-west-1"}``, is read as JSON, any other as text);
fsspec's usual configuration (``FSSPEC_S3_ENDPOINT_URL``, ``FSSPEC_CONFIG_DIR``...) applies
below them. ``--moved-from URL`` says where a tree was written when it lies elsewhere now.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ckptstore.redaction import redact_text

__all__ = [
    "EXIT_OK",
    "EXIT_PROBLEM",
    "EXIT_USAGE",
    "add_moved_from",
    "add_storage_options",
    "fail",
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
        "key=..., secret=...; a JSON VALUE is read as JSON",
    )


def add_moved_from(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--moved-from",
        metavar="URL",
        help="where the tree was written (a copied bucket, an unpacked fixture): absolute "
        "references into URL are read below the given path instead",
    )


def storage_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """The ``--storage-option`` values as a dict (a malformed one is a usage error)."""
    options: dict[str, Any] = {}
    for item in args.storage_option or ():
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            parser.error(f"--storage-option takes KEY=VALUE, got {redact_text(item)!r}")
        try:
            options[key.strip()] = json.loads(value)
        except ValueError:
            options[key.strip()] = value
    return options


def fail(command: str, exc: BaseException, code: int = EXIT_USAGE) -> int:
    """Print ``exc`` as one line on stderr (its type, its redacted message) and return
    ``code``."""
    message = " ".join(redact_text(str(exc), limit=600).split())
    print(f"ckptstore {command}: {type(exc).__name__}: {message}", file=sys.stderr)
    return code
