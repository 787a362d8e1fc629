"""Meta-test of the promise: every clause is shown to fail against an implementation that breaks
it (``fixtures/broken/ckptbroken``; ``test_broken_implementations`` runs each of them). A clause
that no defect fails would be a test that cannot fail.
"""

from __future__ import annotations

import importlib
import sys

from ckptconform.clauses import CLAUSES
from tests.meta.suite_runner import BROKEN_DIR

sys.path.insert(0, str(BROKEN_DIR))
ckptbroken = importlib.import_module("ckptbroken")


def test_every_clause_is_broken_by_a_broken_implementation():
    """The promise: every clause is shown to fail against an implementation that breaks it."""
    broken_by: dict[str, list[str]] = {cid: [] for cid in CLAUSES}
    for module in ckptbroken.MODULES:
        for cid in importlib.import_module(f"ckptbroken.{module}").conformance_target.breaks:
            broken_by[cid].append(module)
    unbroken = sorted(cid for cid, modules in broken_by.items() if not modules)
    assert not unbroken, f"no broken implementation breaks {len(unbroken)} clauses: {unbroken}"
