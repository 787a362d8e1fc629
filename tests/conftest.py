"""How the project's tests are handed to pytest-xdist's workers: the longest first, and the
tests that share a Spark session on one worker.

Each worker takes the next test when it is done, in this order. The meta-test's runs of broken
implementations take seconds to a minute each, most other tests milliseconds: started first,
the long runs overlap one another and the short tests fill the end, so that no worker finishes
a minute after the rest. Within each group the order is pytest's. The tests of
:data:`ONE_WORKER_MODULES` share one Spark session per worker (a module's fixture): on one
worker they start one JVM, not one per worker.
"""

from __future__ import annotations

from typing import Any

import pytest

#: Broken implementations whose runs wait by design: a child deadlocked at a fork is killed
#: after THR-4's 60 s, and a throttle that never ends is waited out to the retry budget.
LONGEST_BROKEN_RUNS = ("upload_lock_held_at_fork", "throttles_without_end")
BROKEN_RUNS = (
    "tests/meta/test_broken_implementations.py::test_broken_implementation_fails_its_clause["
)
#: Modules whose tests share a Spark session (a module-scoped fixture).
ONE_WORKER_MODULES = ("tests/reference/test_admin_audit_spark.py",)


def _rank(item: pytest.Item) -> int:
    if not item.nodeid.startswith(BROKEN_RUNS):
        return 2
    return 0 if any(item.nodeid.endswith(f"[{name}]") for name in LONGEST_BROKEN_RUNS) else 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its module for :data:`ONE_WORKER_MODULES`, else the
    test alone."""
    module = nodeid.partition("::")[0]
    return module if module in ONE_WORKER_MODULES else nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's ``load`` distribution, test by test in the order above, but every test of a
    module of :data:`ONE_WORKER_MODULES` to one worker (xdist's ``loadgroup`` would do it
    with marks, were its grouping not lost on pytest 9.2: pytest-dev/pytest-xdist#1386). The
    modules' units go first: the largest units first is xdist's order for scopes."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModulesOnOneWorker(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return ModulesOnOneWorker(config, log)
