"""Writes CONFORMANCE.md from the clause catalog and the suite's clause markers.

Usage: python scripts/gen_conformance_md.py [--check]
With --check it writes nothing and exits 1 if the committed file is out of date.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conformance_doc import render

TARGET = Path(__file__).resolve().parent.parent / "CONFORMANCE.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if CONFORMANCE.md is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not TARGET.exists() or TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is stale: run python scripts/gen_conformance_md.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
