"""ClauseFailure and clauses_of: the clause ids travel with the exception, not in its text."""

from __future__ import annotations

import pickle

import pytest

from ckptconform.failures import ClauseFailure, clauses_of
from ckptconform.suite._driver import expect_error, tagged


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
