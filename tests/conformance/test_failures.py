"""ClauseFailure and clauses_of: the clause ids travel with the exception, not in its text."""

from __future__ import annotations

import gc
import pickle

import pytest

from ckptconform.failures import ClauseFailure, clauses_of, fill_listings, promise_listing
from ckptconform.suite._driver import assert_same_bytes, expect_error, tagged


def test_ids_survive_pickling_and_are_deduplicated():
    exc = pickle.loads(pickle.dumps(ClauseFailure(["INL-3", "INL-3", "STR-1"], "why")))
    assert exc.clauses == ("INL-3", "STR-1")
    assert str(exc) == "why"
    assert isinstance(exc, AssertionError)


def test_a_failure_names_at_least_one_clause():
    with pytest.raises(ValueError, match="at least one clause"):
        ClauseFailure([], "why")


def test_clauses_of_groups_and_plain_errors():
    a, b = ClauseFailure(["INL-1"], "a"), ClauseFailure(["INL-3"], "b")
    assert clauses_of(a) == ("INL-1",)
    assert clauses_of(ExceptionGroup("two", [a, b])) == ("INL-1", "INL-3")
    assert clauses_of(ExceptionGroup("mixed", [a, AssertionError("[INL-3] text")])) == ()
    assert clauses_of(AssertionError("[INL-3] text only")) == ()
    assert clauses_of(None) == ()


def test_tagged_turns_an_assertion_into_its_clause():
    with pytest.raises(ClauseFailure) as info, tagged("MD-4", "compare metadata", n=1):
        assert 1 == 2, "the bytes differ"
    assert info.value.clauses == ("MD-4",)
    assert str(info.value).startswith("[MD-4] compare metadata(n=1)")
    assert "the bytes differ" in str(info.value)


def test_tagged_names_an_unexpected_exception_and_keeps_inner_clauses():
    with pytest.raises(ClauseFailure) as info, tagged("PTR-1", "resolve"):
        raise KeyError("boom")
    assert info.value.clauses == ("PTR-1",)
    assert "raised KeyError" in str(info.value)
    with pytest.raises(ClauseFailure) as nested, tagged("PTR-1", "outer"), tagged("PTR-2", "in"):
        raise OSError("x")
    assert nested.value.clauses == ("PTR-2",)


def test_expect_error_fails_its_clause():
    def returns() -> int:
        return 3

    with pytest.raises(ClauseFailure) as info:
        expect_error(ValueError, "INL-7", "threshold -1", returns)
    assert info.value.clauses == ("INL-7",)
    assert "but it returned 3" in str(info.value)
    assert isinstance(expect_error(ValueError, "INL-7", "x", lambda: int("x")), ValueError)


@pytest.mark.parametrize(
    ("got", "where"),
    [
        (b"a" * 5_000_000 + b"x" + b"a" * 999, "the first differing byte is at offset 5,000,000"),
        (b"a" * 3_000_000, "3,000,000 bytes read back, 5,001,000 written; the first 3,000,000"),
    ],
)
def test_a_large_state_that_reads_back_otherwise_is_explained_in_a_line(got, where, monkeypatch):
    """A failed comparison of megabytes names the offset, without pytest's full diff (which
    the CI variable turns on)."""
    monkeypatch.setenv("CI", "true")
    with pytest.raises(AssertionError) as failure:
        assert_same_bytes(got, b"a" * 5_001_000, "STR-14: read back")
    assert where in str(failure.value)
    assert len(str(failure.value)) < 300
    with pytest.raises(ClauseFailure, match="STR-14"), tagged("STR-14", "read back"):
        assert_same_bytes(got, b"a" * 5_001_000, "STR-14: read back")
    assert_same_bytes(got, got, "equal")


class _Sandbox:
    """Enough of a sandbox for a promised listing: a root and a listing that counts its calls."""

    def __init__(self, root: str, fails: bool = False) -> None:
        self.root = root
        self.fails = fails
        self.listed = 0

    def listing(self) -> str:
        self.listed += 1
        if self.fails:
            raise OSError("the store is gone")
        return f"{self.root}:\n  a.bin (4 bytes)"


def test_a_promised_listing_is_taken_only_when_the_failure_is_reported():
    sandbox = _Sandbox("file:///x/promised")
    message = f"[STR-1] write\n{promise_listing(sandbox)}"
    assert sandbox.listed == 0
    failure = ClauseFailure(("STR-1",), message)
    fill_listings(failure)
    assert sandbox.listed == 1
    assert str(failure) == "[STR-1] write\nfile:///x/promised:\n  a.bin (4 bytes)"
    assert pickle.loads(pickle.dumps(failure)).args == failure.args


def test_listings_are_filled_in_groups_causes_and_contexts():
    one, two = _Sandbox("mem://one"), _Sandbox("mem://two")
    inner = AssertionError(f"inner {promise_listing(one)}")
    outer = ClauseFailure(("MD-1",), f"outer {promise_listing(two)}")
    outer.__cause__ = inner
    group = BaseExceptionGroup("two failures", [outer, ValueError("no listing here")])
    fill_listings(group)
    assert str(inner) == "inner mem://one:\n  a.bin (4 bytes)"
    assert str(outer) == "outer mem://two:\n  a.bin (4 bytes)"
    fill_listings(None)


def test_a_listing_that_fails_or_whose_sandbox_is_gone_says_so():
    failing = _Sandbox("s3://bucket/failing", fails=True)
    text = promise_listing(failing)
    gone_text = promise_listing(_Sandbox("s3://bucket/gone"))
    gc.collect()
    error = AssertionError(f"{text} {gone_text}")
    fill_listings(error)
    assert "<listing failed: OSError: the store is gone>" in str(error)
    assert "s3://bucket/gone: (not listed: its sandbox is gone)" in str(error)


def test_a_root_promised_by_a_failure_and_its_cause_is_listed_once():
    sandbox = _Sandbox("file:///x/twice")
    inner = AssertionError(f"[STR-1] read\n{promise_listing(sandbox)}")
    outer = ClauseFailure(("STR-1",), f"[STR-1] write\n{promise_listing(sandbox)}\n{inner}")
    outer.__cause__ = inner
    fill_listings(outer)
    assert sandbox.listed == 1
    assert str(outer).count("a.bin (4 bytes)") == 2
    assert str(inner).endswith("a.bin (4 bytes)")
