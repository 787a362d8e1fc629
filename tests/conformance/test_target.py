"""Loading and validating ``--impl`` targets; every problem is a usage error (exit code 4)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ckptconform.clauses import CAPABILITIES, OPTIONS, options_of_capability
from ckptconform.target import (
    Target,
    TargetError,
    UndeclaredOptionError,
    load_target,
    validate_target,
)
from tests.conformance.kit import must_clause, run_pytest, write_target


@pytest.fixture
def on_path(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path`` on sys.path; modules written there are forgotten afterwards."""
    sys.path.insert(0, str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    sys.path.remove(str(tmp_path))
    for name in set(sys.modules) - before:
        del sys.modules[name]


def test_loads_registered_entry_point():
    target = load_target("ckptstore")
    assert isinstance(target, Target)
    assert target.name
    assert "entry point ckptstore" in target.origin
    assert target.capabilities <= set(CAPABILITIES)


def test_loads_module_default_attribute(on_path):
    module = write_target(on_path, "tgt_default", capabilities=["savepoints"], schemes=["FILE"])
    target = load_target(module)
    assert target.name == "fake"
    assert target.capabilities == frozenset({"savepoints"})
    assert target.schemes == frozenset({"file"})
    assert target.supports_scheme("file")
    assert not target.supports_scheme("s3")
    assert target.origin == f"{module}:conformance_target"
    storage = target.make_storage(checkpoint_dir="memory:///x", options={"a": 1})
    assert storage.kwargs == {
        "checkpoint_dir": "memory:///x",
        "savepoint_dir": None,
        "options": {"a": 1},
    }


def test_loads_callable_attribute(on_path):
    write_target(on_path, "tgt_base")
    (on_path / "tgt_factory.py").write_text(
        "import tgt_base\n\ndef make():\n    return tgt_base.conformance_target\n"
    )
    assert load_target("tgt_factory:make").name == "fake"


def test_known_failures_are_kept(on_path):
    clause = must_clause()
    module = write_target(on_path, "tgt_known", known_failures={clause: "not yet"})
    assert load_target(module).known_failures == {clause: "not yet"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nosuchpkg_xyz", "no module named 'nosuchpkg_xyz' and no target of that name"),
        ("", "--impl needs a value"),
        ("mod:", "expected MODULE:ATTR"),
    ],
)
def test_unknown_targets(spec, message):
    with pytest.raises(TargetError, match=message):
        load_target(spec)


def test_broken_module(on_path):
    (on_path / "tgt_broken.py").write_text("import nosuch_dependency_abc\n")
    with pytest.raises(TargetError, match="importing 'tgt_broken' failed: ModuleNotFoundError"):
        load_target("tgt_broken")


def test_missing_attribute(on_path):
    (on_path / "tgt_empty.py").write_text("x = 1\n")
    with pytest.raises(TargetError, match="has no attribute 'conformance_target'"):
        load_target("tgt_empty")


def test_failing_factory(on_path):
    (on_path / "tgt_raises.py").write_text(
        "def conformance_target():\n    raise RuntimeError('boom')\n"
    )
    with pytest.raises(TargetError, match="RuntimeError: boom"):
        load_target("tgt_raises")


class _Obj:
    def __init__(self, **attrs: object) -> None:
        self.name = "t"
        self.capabilities: object = ()
        self.make_storage = lambda **kw: kw
        self.__dict__.update(attrs)


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"name": ""}, "'name' must be a non-empty string"),
        ({"name": 3}, "'name' must be a non-empty string"),
        ({"make_storage": None}, "'make_storage' must be callable"),
        ({"capabilities": ["teleport"]}, r"unknown capabilities \['teleport'\]"),
        ({"capabilities": "savepoints"}, "'capabilities' must be a collection of strings"),
        ({"schemes": []}, "'schemes' is empty"),
        (
            {"capabilities": {"savepoints": set()}},
            "capabilities\\['savepoints'\\] is empty; do not claim 'savepoints', or give None",
        ),
        (
            {"capabilities": {"savepoints": "s3"}},
            "capabilities\\['savepoints'\\]' must be a collection of strings",
        ),
        (
            {"capabilities": {"savepoints": {"s3", "gs"}}, "schemes": ["s3"]},
            "capabilities\\['savepoints'\\] names schemes \\['gs'\\] that 'schemes' leaves out",
        ),
        ({"known_failures": {"XX-99": "?"}}, r"unknown clause ids \['XX-99'\]"),
        ({"known_failures": ["a"]}, "'known_failures' must be a mapping"),
        ({"options": "inline_threshold"}, "'options' must be a collection of strings"),
        ({"options": ["inline_treshold"]}, r"unknown option keys \['inline_treshold'\]; known: "),
        (
            {"capabilities": ["inline-state"], "options": ["inline_threshold"]},
            "capability 'inline-state' is configured through the option\\(s\\) "
            "write_buffer_size: add them to 'options' or do not claim 'inline-state'",
        ),
        (
            {"capabilities": ["retry-budget", "memory-limit"], "options": ["storage_options"]},
            "'memory-limit' is configured through the option\\(s\\) max_state_size",
        ),
    ],
)
def test_invalid_targets(attrs, message):
    with pytest.raises(TargetError, match=message):
        validate_target(_Obj(**attrs), spec="x")


def test_capabilities_may_be_claimed_per_scheme():
    target = validate_target(
        _Obj(capabilities={"savepoints": None, "fast-duplicate": ["S3", "file"]}), spec="x"
    )
    assert target.capabilities == frozenset({"savepoints", "fast-duplicate"})
    assert target.capability_schemes == {"fast-duplicate": frozenset({"s3", "file"})}
    assert target.capability_labels() == ["fast-duplicate (on file, s3)", "savepoints"]


def test_the_reference_claims_fast_duplicate_where_it_copies_server_side():
    target = load_target("ckptstore")
    assert {"fast-duplicate", "task-owned-state"} <= target.capabilities
    # fast-duplicate on these schemes only (not sftp); task-owned-state on every scheme
    assert target.capability_schemes == {"fast-duplicate": frozenset({"file", "memory", "s3"})}


def test_unknown_option_keys_name_the_known_ones():
    with pytest.raises(TargetError) as info:
        validate_target(_Obj(options=["inline_threshold", "bogus"]), spec="x")
    assert "unknown option keys ['bogus']" in str(info.value)
    for key in OPTIONS:
        assert key in str(info.value)


class _Recorder:
    name = "rec"
    capabilities = frozenset({"inline-state"})

    def __init__(self, options: object = None) -> None:
        self.options = options
        self.calls: list[dict[str, object]] = []

    def make_storage(self, **kwargs: object) -> object:
        self.calls.append(kwargs)
        return kwargs


def test_without_options_every_key_is_passed():
    recorder = _Recorder()
    target = validate_target(recorder)
    assert target.options is None
    assert target.supports_option("max_state_size")
    passed = {"storage_options": {}, "inline_threshold": 0, "max_state_size": 3}
    target.make_storage(checkpoint_dir="file:///c", options=passed)
    assert recorder.calls[-1]["options"] == passed


def test_declared_options_are_what_the_target_gets():
    recorder = _Recorder(["inline_threshold", "write_buffer_size"])
    target = validate_target(recorder)
    assert target.options == {"inline_threshold", "write_buffer_size"}
    assert target.supports_option("inline_threshold")
    assert not target.supports_option("storage_options")
    # an empty storage_options it does not declare is left out (local and memory legs)
    target.make_storage(
        checkpoint_dir="file:///c", options={"storage_options": {}, "inline_threshold": 0}
    )
    assert recorder.calls[-1]["options"] == {"inline_threshold": 0}
    # connection settings or another key it does not declare: an error, never dropped
    for options in ({"storage_options": {"endpoint_url": "http://x"}}, {"max_state_size": 1}):
        with pytest.raises(UndeclaredOptionError, match="which declares only: inline_threshold"):
            target.make_storage(checkpoint_dir="file:///c", options=options)


def test_declared_storage_options_are_passed_even_when_empty():
    recorder = _Recorder(["storage_options", "inline_threshold", "write_buffer_size"])
    target = validate_target(recorder)
    target.make_storage(checkpoint_dir="file:///c", options={"storage_options": {}})
    assert recorder.calls[-1]["options"] == {"storage_options": {}}


def test_reference_targets_declare_their_options():
    """The reference's targets declare the keys of their translation tables."""
    fs, jm = load_target("ckptstore"), load_target("ckptstore-jobmanager")
    assert fs.options == {
        "storage_options",
        "inline_threshold",
        "write_buffer_size",
        "entropy_key",
        "entropy_length",
        "create_subdir",
        "retry_attempts",
        "retry_seconds",
        "allow_unconditional_metadata",
    }
    assert jm.options == {
        "storage_options",
        "max_state_size",
        "retry_attempts",
        "retry_seconds",
        "allow_unconditional_metadata",
    }
    for target in (fs, jm):
        for capability in target.capabilities:
            assert set(options_of_capability(capability)) <= target.options


def test_all_problems_are_listed():
    with pytest.raises(TargetError) as info:
        validate_target(_Obj(name="", capabilities=["nope"]), spec="x")
    assert "'name'" in str(info.value)
    assert "nope" in str(info.value)


# --------------------------------------------------------------------------- as a user runs it


def test_pytest_with_unknown_impl_is_a_usage_error(tmp_path):
    run = run_pytest(tmp_path, "--impl=nosuchpkg")
    assert run.returncode == 4, run
    assert "no module named 'nosuchpkg'" in run.output, run
    assert "ckptconform.targets" in run.output, run


def test_pytest_with_broken_target_is_a_usage_error(tmp_path):
    write_target(tmp_path, "bad_caps", capabilities=["warp-drive"])
    run = run_pytest(tmp_path, "--impl=bad_caps")
    assert run.returncode == 4, run
    assert "unknown capabilities ['warp-drive']" in run.output, run


def test_pytest_with_unknown_known_failure_is_a_usage_error(tmp_path):
    write_target(tmp_path, "bad_known", known_failures={"NOPE-1": "x"})
    run = run_pytest(tmp_path, "--impl=bad_known")
    assert run.returncode == 4, run
    assert "unknown clause ids ['NOPE-1']" in run.output, run


def test_suite_without_impl_is_a_usage_error(tmp_path):
    from ckptconform.plugin import suite_dir

    run = run_pytest(tmp_path, str(suite_dir()), "--co")
    assert run.returncode == 4, run
    assert "needs a target: run it with --impl=TARGET" in run.output, run


def test_import_root_is_where_the_target_was_found(tmp_path, monkeypatch):
    """A repro line puts this directory on PYTHONPATH when a fresh interpreter lacks it."""
    from ckptconform.plugin import default_import_path
    from ckptconform.target import load_target

    package = tmp_path / "rootpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "sub.py").write_text(
        "from ckptstore.targets import conformance_target as _t\nconformance_target = _t\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    target = load_target("rootpkg.sub")
    assert target.import_root == str(tmp_path.resolve())
    assert target.import_root not in default_import_path()


def test_a_targets_distribution_is_the_one_the_standard_library_names():
    """The version in the report header comes from the distribution holding the target's
    top-level module: found by a text search, it agrees with ``packages_distributions`` for
    every top-level name installed here, and is None for a module no distribution holds."""
    from importlib import metadata

    from ckptconform.target import _distribution_of

    known = metadata.packages_distributions()
    assert {"ckptstore", "ckptconform", "pytest", "_pytest", "moto"} <= set(known)
    for top, distributions in known.items():
        assert _distribution_of(top) == distributions[0], top
    assert _distribution_of("ckptbroken") is None
