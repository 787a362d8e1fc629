"""The skip policy (``ckptconform.policy``): pure functions, checked without pytest runs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ckptconform.clauses import CLAUSES, OPTIONS
from ckptconform.policy import (
    FLINK_LEG,
    SPARK_LEG,
    Needs,
    Offer,
    needs_of,
    skip_reason,
    storage_options_skip,
)


def _clause(capability: str) -> str:
    """A clause needing only ``capability``, else the first that needs it among others."""
    alone = [c.id for c in CLAUSES.values() if c.capabilities == (capability,)]
    return (alone or [c.id for c in CLAUSES.values() if capability in c.capabilities])[0]


MUST = next(c.id for c in CLAUSES.values() if c.level == "MUST" and not c.capabilities)
INLINE = _clause("inline-state")
ENTROPY = _clause("entropy-injection")

ALL = frozenset({"inline-state", "entropy-injection", "file-layout", "memory-limit"})


def test_needs_come_from_clauses_markers_and_the_option_catalog():
    needs = needs_of([INLINE, MUST], requires=["file-layout"], options=["max_state_size"])
    assert needs.capabilities == ("inline-state", "file-layout")
    assert needs.options == ("inline_threshold", "write_buffer_size", "max_state_size")
    assert needs_of([ENTROPY]).options == ("entropy_key", "entropy_length")
    assert needs_of([MUST]) == Needs()


def test_every_option_of_a_capability_is_needed_by_its_clauses():
    for key, option in OPTIONS.items():
        if option.capability is None:
            continue
        clause = _clause(option.capability)
        assert key in needs_of([clause]).options, (key, clause)


def test_a_target_without_options_gets_no_option_skip():
    needs = needs_of([MUST], options=["inline_threshold"])
    assert skip_reason(needs, Offer("t", ALL)) == (None, [])


def test_an_undeclared_option_skips_with_its_reason():
    needs = needs_of([MUST], options=["inline_threshold", "entropy_key"])
    offer = Offer("mine", ALL, options=frozenset({"entropy_key"}))
    assert skip_reason(needs, offer) == ("option inline_threshold not supported by mine", [])
    offer = Offer("mine", ALL, options=frozenset())
    assert skip_reason(needs, offer) == (
        "option inline_threshold, entropy_key not supported by mine",
        [],
    )
    offer = Offer("mine", ALL, options=frozenset({"inline_threshold", "entropy_key"}))
    assert skip_reason(needs, offer) == (None, [])


def test_a_test_of_flinks_loader_skips_with_the_flink_legs_reason():
    offer = Offer("mine", ALL, leg_skips={FLINK_LEG: "no Java"})
    assert skip_reason(needs_of([INLINE], backend="local", flink=True), offer) == ("no Java", [])
    assert skip_reason(needs_of([INLINE], backend="local"), offer) == (None, [])


def test_reasons_come_in_order_leg_spark_capability_option_trait():
    needs = needs_of([INLINE], backend="moto", spark=True, traits=[("object_store", False)])
    offer = Offer(
        "mine",
        frozenset(),
        options=frozenset(),
        leg_skips={"moto": "moto: not installed", SPARK_LEG: "no Java"},
        traits={"moto": {"object_store": True}},
    )
    reasons = []
    for change in (
        {},
        {"leg_skips": {SPARK_LEG: "no Java"}},
        {"leg_skips": {}},
        {"leg_skips": {}, "capabilities": frozenset({"inline-state"})},
        {
            "leg_skips": {},
            "capabilities": frozenset({"inline-state"}),
            "options": frozenset({"inline_threshold", "write_buffer_size"}),
        },
    ):
        reasons.append(skip_reason(needs, replace(offer, **change))[0])
    assert reasons == [
        "moto: not installed",
        "no Java",
        "capability inline-state not claimed by mine",
        "option inline_threshold, write_buffer_size not supported by mine",
        "backend moto has object_store=True; the test needs object_store=False",
    ]


def test_a_capability_claimed_on_other_schemes_skips_with_the_schemes():
    needs = needs_of([INLINE], backend="sftp")
    offer = Offer(
        "mine",
        ALL,
        capability_schemes={"inline-state": frozenset({"s3", "file"})},
        backend_schemes={"sftp": "sftp", "moto": "s3", "local": "file"},
    )
    assert skip_reason(needs, offer) == (
        "capability inline-state not claimed by mine on scheme sftp (only on file, s3)",
        [],
    )
    for backend in ("moto", "local"):
        assert skip_reason(replace(needs, backend=backend), offer) == (None, [])
    assert skip_reason(needs_of([ENTROPY], backend="sftp"), offer) == (None, [])
    # a capability not claimed at all is reported as such, before any scheme
    assert skip_reason(needs, replace(offer, capabilities=frozenset()))[0] == (
        "capability inline-state not claimed by mine"
    )


@pytest.mark.parametrize(
    ("traits", "backend", "problem"),
    [
        ([("levitates", True)], "local", "unknown backend trait 'levitates'"),
        ([("ledger", True)], None, "backend_traits on a test without a backend"),
    ],
)
def test_bad_trait_markers_are_problems(traits, backend, problem):
    needs = needs_of([MUST], backend=backend, traits=traits)
    reason, problems = skip_reason(needs, Offer("t", ALL, traits={"local": {}}))
    assert reason is None
    assert problems == [problem]


def test_traits_that_want_nothing_are_ignored():
    needs = needs_of([MUST], backend="local", traits=[("ledger", None)])
    assert skip_reason(needs, Offer("t", ALL, traits={"local": {"ledger": False}})) == (None, [])


def test_storage_options_skip():
    settings = {"endpoint_url": "http://127.0.0.1:1"}
    assert storage_options_skip("t", None, "moto", settings) is None
    assert storage_options_skip("t", {"storage_options"}, "moto", settings) is None
    assert storage_options_skip("t", set(), "local", {}) is None
    assert storage_options_skip("t", set(), "moto", settings) == (
        "backend moto passes its connection settings in option storage_options, not supported by t"
    )
