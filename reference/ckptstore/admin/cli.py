"""The console command ``ckptstore``: one subcommand per module of ``ckptstore.admin``.

Each subcommand's module exposes ``add_arguments(parser)`` and ``run(args) -> int`` (the exit
code); ``run`` finds its own parser in ``args.parser`` (for usage errors). A new subcommand is
one line of :data:`SUBCOMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

__all__ = ["SUBCOMMANDS", "build_parser", "main"]

#: (name, module, one-line help)
SUBCOMMANDS: tuple[tuple[str, str, str], ...] = (
    (
        "inspect",
        "ckptstore.admin.inspect_command",
        "what a completed checkpoint or savepoint holds: operators, state, files",
    ),
    (
        "audit",
        "ckptstore.admin.audit_command",
        "whether the checkpoints under a root restore, and which files are orphans",
    ),
    (
        "copy",
        "ckptstore.admin.copy",
        "a self-contained copy of a completed checkpoint or savepoint",
    ),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ckptstore",
        description="Tools for Flink checkpoint roots on every store the reference reaches.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module_name, text in SUBCOMMANDS:
        module = importlib.import_module(module_name)
        sub = commands.add_parser(name, help=text, description=(module.__doc__ or text).strip())
        sub.formatter_class = argparse.RawDescriptionHelpFormatter
        module.add_arguments(sub)
        sub.set_defaults(run=module.run, parser=sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (``ckptstore inspect ... | head``): no traceback; stdout is
        # pointed at /dev/null so the interpreter's own flush at exit stays quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
