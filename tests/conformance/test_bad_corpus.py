"""The BAD group's corpus (``ckptconform.suite._bad_inputs``) and the S3 legs' unreachable endpoint.

The corpus is data: these tests check that every operation gets bad values of the kinds its
clauses talk about, that no legal value slips in (a legal value would make a conforming storage
fail), that the pointer oracle says what each hostile spelling may resolve to, and that the
strategies only draw what ``classify`` calls bad. The last tests run pytest in a subprocess
against an S3 endpoint that refuses connections: a usage error or a skip, within seconds.
"""

from __future__ import annotations

import socket
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ckptconform.backends.base import BackendSettings
from ckptconform.backends.s3 import RAW_CLIENT_LIMITS, S3EndpointBackend, endpoint_unreachable
from ckptconform.clauses import CAPABILITIES, CLAUSES
from ckptconform.suite._bad_inputs import (
    BAD_SAVEPOINT_TARGETS,
    ESCAPES,
    FREE_POINTERS,
    KINDS,
    LONG_MAX,
    LONG_MIN,
    MAX_POINTER_LENGTH,
    MUST_REFUSE,
    NEGATIVE,
    NONE,
    NULL_OK,
    OPERATIONS,
    RANGE,
    TYPE,
    VALUE,
    bad_values,
    dot_segments,
    dotted_authorities,
    escapes,
    expectation,
    file_url_with_host,
    fixed_cases,
    hostile_reference_bytes,
    hostile_references,
    looks_like_handle,
    normalised,
    operation,
    pointer_suffixes,
    relative_pointer_cases,
    traversal_targets,
)
from ckptstore.api import (
    ByteStreamStateHandle,
    CheckpointedStateScope,
    CheckpointStorageLocationReference,
    JobID,
)
from tests.conformance.kit import dedent, run_pytest, write_target

ALL_CAPABILITIES = frozenset(CAPABILITIES)
HANDLE = ByteStreamStateHandle("corpus", b"x")
WORLD = SimpleNamespace(handle=HANDLE)


def _op(name_start: str) -> Any:
    return next(op for op in OPERATIONS if op.name.startswith(name_start))


# --------------------------------------------------------------------------- the corpus


def test_every_operation_gets_bad_values_of_the_kinds_it_is_about():
    cases = fixed_cases(WORLD, ALL_CAPABILITIES)
    per_operation = Counter(bad.operation.name for bad in cases)
    assert set(per_operation) == {op.name for op in OPERATIONS}
    assert min(per_operation.values()) >= 6, per_operation
    kinds = Counter(bad.kind for bad in cases)
    assert set(kinds) == set(KINDS), kinds
    assert len(cases) >= 240
    # None is a required argument's TypeError nearly everywhere
    none_ops = {bad.operation.name for bad in cases if bad.kind == NONE}
    assert len(none_ops) >= 12


def test_capabilities_select_operations():
    without = {bad.operation.name for bad in fixed_cases(WORLD, frozenset())}
    assert not any("savepoint" in name for name in without)
    with_savepoints = {bad.operation.name for bad in fixed_cases(WORLD, {"savepoints"})}
    assert any("savepoint" in name for name in with_savepoints)


def test_no_legal_value_is_in_the_corpus():
    for bad in fixed_cases(WORLD, ALL_CAPABILITIES):
        assert bad.operation.classify(bad.value) == bad.kind
        if "(handle" in bad.operation.name and "(handles" not in bad.operation.name:
            assert bad.value is not HANDLE  # a handle alone is legal there (not for duplicate)
        if "write(data)" in bad.operation.name:
            assert not isinstance(bad.value, bytes | bytearray | memoryview)
        if "(scope)" in bad.operation.name or ", scope)" in bad.operation.name:
            assert not isinstance(bad.value, CheckpointedStateScope)
            assert bad.value not in ("exclusive", "shared")


@pytest.mark.parametrize(
    ("name", "value", "kind"),
    [
        ("access.initialize_location_for_checkpoint", -1, RANGE),
        ("access.initialize_location_for_checkpoint", LONG_MAX, None),
        ("access.initialize_location_for_checkpoint", 0, None),
        ("access.initialize_location_for_checkpoint", LONG_MAX + 1, RANGE),
        ("access.initialize_location_for_checkpoint", True, TYPE),
        ("access.initialize_location_for_checkpoint", "1", TYPE),
        ("access.initialize_location_for_checkpoint", None, NONE),
        ("access.initialize_location_for_savepoint(checkpoint_id)", -1, NEGATIVE),
        ("access.initialize_location_for_savepoint(checkpoint_id)", LONG_MIN, NEGATIVE),
        ("access.initialize_location_for_savepoint(checkpoint_id)", LONG_MIN - 1, RANGE),
        ("access.resolve_checkpoint_storage_location(checkpoint_id", -5, NEGATIVE),
        ("access.initialize_location_for_savepoint(1, target)", None, None),
        ("access.initialize_location_for_savepoint(1, target)", "/any/string", None),
        ("access.initialize_location_for_savepoint(1, target)", b"/x", TYPE),
        ("storage.resolve_checkpoint", None, NONE),
        ("storage.resolve_checkpoint", b"abc", TYPE),
        ("storage.create_checkpoint_storage", JobID.generate(), None),
        ("storage.create_checkpoint_storage", "ab" * 16, None),
        ("storage.create_checkpoint_storage", "zz" * 16, VALUE),
        ("access.resolve_checkpoint_storage_location(3, reference)", b"abc", TYPE),
        (
            "access.resolve_checkpoint_storage_location(3, reference)",
            CheckpointStorageLocationReference.default(),
            None,
        ),
        ("factory.create_checkpoint_state_output_stream", None, NULL_OK),
        ("factory.create_checkpoint_state_output_stream", "exclusive", None),
        ("factory.create_checkpoint_state_output_stream", "private", VALUE),
        ("factory.create_checkpoint_state_output_stream", 0, TYPE),
        ("factory.duplicate([handle of chk-1], scope)", None, VALUE),
        ("factory.can_fast_duplicate(handle of chk-1, scope)", None, NULL_OK),
        ("factory.duplicate(handles", [], None),
        ("factory.duplicate(handles", [HANDLE, HANDLE], None),
        ("factory.duplicate(handles", [HANDLE, None], VALUE),
        ("factory.duplicate(handles", [HANDLE, "x"], TYPE),
        ("factory.duplicate(handles", HANDLE, TYPE),
        ("completed.resolve_handle", HANDLE, None),
        ("completed.resolve_handle", {"file_path": "/x"}, TYPE),
        ("state stream (exclusive).write", memoryview(b"x"), None),
        ("state stream (exclusive).write", 5, TYPE),
        ("metadata stream.write", None, NONE),
    ],
)
def test_classification(name, value, kind):
    assert _op(name).classify(value) == kind


def test_looks_like_handle_is_the_protocol():
    assert looks_like_handle(HANDLE)
    assert not looks_like_handle({"state_size": 1})
    assert not looks_like_handle("handle")


@settings(max_examples=200, deadline=None)
@given(value=bad_values(), index=st.integers(min_value=0, max_value=len(OPERATIONS) - 1))
def test_classify_never_raises_and_sample_values_are_bad(value, index):
    kind = OPERATIONS[index].classify(value)
    assert kind is None or kind in KINDS


def test_must_refuse_leaves_out_what_flink_accepts():
    assert NEGATIVE not in MUST_REFUSE
    assert NULL_OK not in MUST_REFUSE
    assert set(MUST_REFUSE) | {NEGATIVE, NULL_OK} == set(KINDS)


def test_operation_by_name():
    assert operation(OPERATIONS[0].name) is OPERATIONS[0]


def test_clauses_of_the_corpus_exist():
    bad = {cid for cid in CLAUSES if cid.startswith("BAD-")}
    assert bad == {f"BAD-{n}" for n in range(1, 18)}
    assert {cid for cid in bad if CLAUSES[cid].level == "SHOULD"} == {
        "BAD-3",
        "BAD-7",
        "BAD-11",
        "BAD-12",
        "BAD-13",
        "BAD-14",
        "BAD-16",
    }
    assert CLAUSES["BAD-9"].capabilities == ("retry-budget",)
    assert CLAUSES["BAD-8"].capabilities == ("redacts-secrets",)
    assert CLAUSES["BAD-5"].capabilities == ("savepoints",)


# --------------------------------------------------------------------------- pointers


ONE = ("checkpoints", "job", "chk-1")
TWO = ("checkpoints", "job", "chk-2")
KNOWN = {
    normalised(ONE): "chk-1",
    normalised((*ONE, "_metadata")): "chk-1",
    normalised(TWO): "chk-2",
}


def test_normalisation_helpers():
    assert normalised(("a", "b", "..", "c", ".", "", "d")) == "a/c/d"
    assert escapes(("a", "..", ".."))
    assert escapes(("..",))
    assert not escapes(("a", "..", "b"))
    assert not escapes((".", "", "x"))
    assert dot_segments("s3://b/a/../c/./d") == ["..", "."]
    assert dot_segments("file:///tmp/a..b/c") == []


def test_pointer_oracle():
    by_why = {c.why: c for c in relative_pointer_cases(ONE, TWO, KNOWN)}
    assert by_why["'..' into a sibling"].expect == "chk-2"
    assert by_why["'..' into a sibling"].segments == (*ONE, "..", "chk-2")
    assert by_why["a trailing '.'"].expect == "chk-1"
    assert by_why["'..' up to the root and back down"].expect == "chk-1"
    assert by_why["an empty segment ('//')"].expect == "chk-1"
    assert by_why["'..' to the parent directory (no checkpoint there)"].expect is None
    for why in ("a percent-encoded '..' (a literal name)", "a half-encoded '..'",
                "a NUL segment", "a lone surrogate (not UTF-8)"):  # fmt: skip
        assert by_why[why].expect is None, why
    assert by_why["'..' far above the root"].expect == ESCAPES
    assert by_why["'..' one above the root"].expect == ESCAPES
    long_ones = [c for c in by_why.values() if len(c.pointer("s3://b/r")) > MAX_POINTER_LENGTH]
    assert len(long_ones) >= 2
    assert by_why["a trailing '.'"].pointer("s3://b/r/") == "s3://b/r/checkpoints/job/chk-1/."
    assert expectation((*ONE, "x", "..", "_metadata"), KNOWN) == "chk-1"


def test_free_pointers_name_nothing():
    assert "" in FREE_POINTERS
    assert any(len(p) > MAX_POINTER_LENGTH for p in FREE_POINTERS)
    assert any("\x00" in p for p in FREE_POINTERS)
    assert any("%2e%2e" in p for p in FREE_POINTERS)
    assert any(not p.isascii() for p in FREE_POINTERS)


@settings(max_examples=100, deadline=None)
@given(suffix=pointer_suffixes())
def test_pointer_suffixes_are_segments(suffix):
    assert 1 <= len(suffix) <= 6
    assert all(isinstance(s, str) and "/" not in s for s in suffix)
    outcome = expectation((*ONE, *suffix), KNOWN)
    assert outcome in (None, ESCAPES, "chk-1", "chk-2")


def test_hostile_references_are_references():
    refs = hostile_references()
    assert len(refs) >= 6
    assert all(isinstance(ref, CheckpointStorageLocationReference) for _, ref in refs)
    assert not any(ref.is_default for _, ref in refs)


def test_hostile_references_include_one_byte():
    """Flink's reference takes any non-empty array: one byte, shorter than the magic number."""
    assert any(len(data) == 1 for _, data in hostile_reference_bytes())
    assert len(hostile_references()) == len(hostile_reference_bytes())


@pytest.mark.parametrize(
    ("pointer", "spelt"),
    [
        ("/tmp/a/chk-1", "file://tmp/a/chk-1"),
        ("file:/tmp/a/chk-1", "file://tmp/a/chk-1"),
        ("file:///tmp/a/chk-1", "file://tmp/a/chk-1"),
        ("/chk-1", None),
        ("file://host/tmp/a", None),
        ("s3://bucket/a/chk-1", None),
        ("memory:///a/chk-1", None),
        ("relative/chk-1", None),
    ],
)
def test_file_url_with_host(pointer, spelt):
    assert file_url_with_host(pointer) == spelt


@pytest.mark.parametrize(
    ("pointer", "spelt"),
    [
        ("s3://bucket/a/chk-1", ["s3://./bucket/a/chk-1", "s3://../bucket/a/chk-1"]),
        ("s3a://bucket", ["s3a://./bucket", "s3a://../bucket"]),
        ("file:///tmp/a/chk-1", []),
        ("memory:///a/chk-1", []),
        ("/tmp/a/chk-1", []),
        ("s3:///a", []),
    ],
)
def test_dotted_authorities(pointer, spelt):
    assert dotted_authorities(pointer) == spelt


def test_savepoint_targets():
    assert {"", " "} <= set(BAD_SAVEPOINT_TARGETS)
    assert not any("\n" in t or "\udcff" in t for t in BAD_SAVEPOINT_TARGETS)  # Flink accepts
    for segments, norm, absent, _ in traversal_targets():
        assert normalised(segments) == "/".join(norm)
        assert not escapes(segments)
        assert all(name not in norm for name in absent)


# --------------------------------------------------------------------------- unreachable endpoints


def _closed_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = int(probe.getsockname()[1])
    probe.close()
    return port


def test_endpoint_probe():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        assert endpoint_unreachable(f"http://127.0.0.1:{server.getsockname()[1]}") is None
    port = _closed_port()
    reason = endpoint_unreachable(f"http://user:hunter2@127.0.0.1:{port}")
    assert reason is not None
    assert f"127.0.0.1:{port}" in reason
    assert "hunter2" not in reason
    assert "user" not in reason
    assert endpoint_unreachable("ftp://host") is not None
    assert endpoint_unreachable("http://host:notaport") is not None


def test_raw_client_is_bounded():
    pytest.importorskip("s3fs")
    backend = S3EndpointBackend(BackendSettings(s3_endpoint="http://127.0.0.1:9"))
    backend.endpoint = "http://127.0.0.1:9"
    fs = backend._make_raw()
    assert fs.retries == RAW_CLIENT_LIMITS["s3fs_retries"] <= 3
    assert fs.config_kwargs["connect_timeout"] == RAW_CLIENT_LIMITS["connect_timeout"] <= 5
    assert fs.config_kwargs["retries"] == {"max_attempts": 2}
    assert "user_agent_extra" in fs.config_kwargs


ONE_TEST = dedent(
    """
    import pytest

    @pytest.mark.clause("PTR-1")
    def test_on_s3(backend):
        pass
    """
)


@pytest.fixture
def unreachable_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    pytest.importorskip("s3fs")
    write_target(tmp_path)
    (tmp_path / "test_one.py").write_text(ONE_TEST)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ckptconform-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ckptconform-secret")
    return tmp_path, f"http://127.0.0.1:{_closed_port()}"


def test_unreachable_required_s3_leg_is_a_quick_usage_error(unreachable_run):
    directory, endpoint = unreachable_run
    started = time.monotonic()
    run = run_pytest(
        directory, "--impl=fake_target", "--backend=s3", f"--s3-endpoint={endpoint}",
        "--require-legs=s3", "--spark-master=none", "test_one.py", timeout=60,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert run.returncode == 4, run
    assert "required leg(s) cannot run" in run.output, run
    assert endpoint in run.output, run
    assert elapsed < 15, f"took {elapsed:.1f} s\n{run}"


def test_unreachable_s3_leg_is_a_quick_skip_naming_the_endpoint(unreachable_run):
    directory, endpoint = unreachable_run
    started = time.monotonic()
    run = run_pytest(
        directory, "--impl=fake_target", "--backend=s3", f"--s3-endpoint={endpoint}",
        "--spark-master=none", "-rs", "test_one.py", timeout=60,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert run.returncode == 0, run
    assert "1 skipped" in run.output, run
    assert f"cannot connect to {endpoint}" in run.output, run
    assert elapsed < 15, f"took {elapsed:.1f} s\n{run}"
