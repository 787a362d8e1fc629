"""``ckptstore inspect POINTER``: what a completed checkpoint or savepoint holds.

POINTER is its directory or its ``_metadata``, on any scheme the reference reaches
(``ckptstore.admin.pointer``). The answer (``ckptstore.admin.inspect``; ``--json`` prints it as
JSON): the checkpoint id, the format version, whether Flink took it as a checkpoint or a
savepoint (from the checkpoint properties), per operator its id, name and uid (format 5 on),
parallelism, maximum parallelism, subtasks and which of them hold state, the kinds of state it
holds, and every file the metadata names, by where it lies: ``exclusive`` (in the checkpoint's
own directory), ``shared`` and ``task-owned`` (its job's ``shared/`` and ``taskowned/``),
``outside`` (anywhere else: another job's directory after a CLAIM restore), with the bytes each
must hold; inline state is counted apart. Sizes are what the metadata claims: this command
reads the ``_metadata`` only (``ckptstore audit`` checks the files).

Exit codes: 0; 1 when the ``_metadata`` is no well-formed metadata; 2 on usage errors and
for a pointer that does not exist or a store that cannot be reached (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys

from ckptstore.admin import arguments, report
from ckptstore.admin.inspect import summarize
from ckptstore.admin.pointer import load_checkpoint
from ckptstore.admin.references import MovedTree
from ckptstore.errors import CheckpointStorageError
from ckptstore.flink_metadata import MetadataFormatError
from ckptstore.paths import parse_storage_path

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pointer", help="a checkpoint or savepoint directory, or its _metadata")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    arguments.add_moved_from(parser)
    parser.add_argument(
        "--moved-to",
        metavar="URL",
        help="with --moved-from: where the tree written at --moved-from lies now (default: "
        "the checkpoint's directory)",
    )
    arguments.add_storage_options(parser)


def run(args: argparse.Namespace) -> int:
    parser: argparse.ArgumentParser = args.parser
    options = arguments.storage_options(args, parser)
    try:
        loaded = load_checkpoint(args.pointer, options)
        metadata, directory, size = loaded.metadata, loaded.directory, len(loaded.data)
        moved = None
        if args.moved_to and not args.moved_from:
            parser.error("--moved-to goes with --moved-from")
        if args.moved_from:
            target = parse_storage_path(args.moved_to) if args.moved_to else directory
            moved = MovedTree(parse_storage_path(args.moved_from), target)
    except MetadataFormatError as exc:
        return arguments.fail("inspect", exc, arguments.EXIT_PROBLEM)
    except (CheckpointStorageError, OSError) as exc:
        return arguments.fail("inspect", exc)
    summary = summarize(metadata, directory, metadata_bytes=size, moved=moved)
    if args.json:
        json.dump(summary.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        report.show_inspect(summary)
    return arguments.EXIT_OK
