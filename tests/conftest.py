"""The order the project's tests are handed to pytest-xdist's workers in: the longest first.

With ``--maxschedchunk=1`` each worker takes the next test when it is done, in this order. The
meta-test's runs of broken implementations take seconds to a minute each, most other tests
milliseconds: started first, the long runs overlap one another and the short tests fill the
end, so that no worker finishes a minute after the rest. Within each group the order is
pytest's.
"""

from __future__ import annotations

import pytest

#: Broken implementations whose runs wait by design: a child deadlocked at a fork is killed
#: after THR-4's 60 s, and a throttle that never ends is waited out to the retry budget.
LONGEST_BROKEN_RUNS = ("upload_lock_held_at_fork", "throttles_without_end")
BROKEN_RUNS = (
    "tests/meta/test_broken_implementations.py::test_broken_implementation_fails_its_clause["
)


def _rank(item: pytest.Item) -> int:
    if not item.nodeid.startswith(BROKEN_RUNS):
        return 2
    return 0 if any(item.nodeid.endswith(f"[{name}]") for name in LONGEST_BROKEN_RUNS) else 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)
