"""The pytest plugin end to end: a fake target and small clause-marked test files, run as a user
runs them (a pytest subprocess in an otherwise empty directory)."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from ckptconform import __version__
from ckptconform.backends.minio import MinioBackend
from ckptconform.clauses import CLAUSES
from tests.conformance.kit import (
    capability_clause,
    dedent,
    must_clause,
    other_must_clause,
    run_pytest,
    should_clause,
    write_target,
)

MUST = must_clause()
MUST2 = other_must_clause()
SHOULD = should_clause()
CAP = capability_clause("savepoints")

OUTCOMES = dedent(
    f'''
    import pytest

    @pytest.mark.clause("{MUST}")
    def test_passes(target, backend):
        assert target.name == "fake"

    @pytest.mark.clause("{MUST2}")
    def test_fails(backend):
        assert False, "boom on purpose"

    @pytest.mark.clause("{SHOULD}")
    def test_should_fails(backend):
        assert False, "should-boom"

    @pytest.mark.clause("{SHOULD}")
    def test_should_passes(backend):
        pass

    @pytest.mark.clause("{CAP}")
    def test_needs_capability(backend):
        pass

    @pytest.mark.clause("{MUST}")
    @pytest.mark.requires("fast-duplicate")
    def test_requires_marker(backend):
        pass

    @pytest.mark.clause("{MUST}")
    @pytest.mark.backend_traits(object_store=True)
    def test_object_store_only(backend):
        pass

    @pytest.mark.clause("{MUST}")
    def test_needs_ledger(ledger):
        pass
    '''
)


def _tests_by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["nodeid"].split("::", 1)[1]: t for t in report["tests"]}


@pytest.fixture
def outcomes(tmp_path: Path) -> Path:
    (tmp_path / "test_outcomes.py").write_text(OUTCOMES)
    return tmp_path


def _run(directory: Path, *args: str) -> tuple[Any, dict[str, Any]]:
    run = run_pytest(directory, "--conformance-report=rep", *args)
    report_file = directory / "rep" / "conformance.json"
    assert report_file.exists(), run
    return run, json.loads(report_file.read_text())


def test_statuses_skips_and_report(outcomes):
    write_target(outcomes, capabilities=["inline-state"])
    run, report = _run(outcomes, "--impl=fake_target", "--backend=local,memory", "test_outcomes.py")
    assert run.returncode == 1, run
    tests = _tests_by_id(report)
    assert tests["test_passes[local]"]["status"] == "PASS"
    assert tests["test_fails[memory]"]["status"] == "FAIL"
    assert "boom on purpose" in tests["test_fails[memory]"]["message"]
    assert tests["test_should_fails[local]"]["status"] == "WARN"
    assert tests["test_should_passes[local]"]["status"] == "PASS"
    assert tests["test_needs_capability[local]"]["status"] == "SKIP"
    assert tests["test_needs_capability[local]"]["message"] == (
        "capability savepoints not claimed by fake"
    )
    assert tests["test_requires_marker[memory]"]["message"] == (
        "capability fast-duplicate not claimed by fake"
    )
    assert "has object_store=False" in tests["test_object_store_only[local]"]["message"]
    assert "no request ledger on backend memory" in tests["test_needs_ledger[memory]"]["message"]
    assert tests["test_fails[local]"]["clauses"] == [MUST2]
    assert tests["test_fails[local]"]["backend"] == "local"

    clauses = report["clauses"]
    assert clauses[MUST2]["status"] == "FAIL"
    assert clauses[MUST2]["backends"] == {"local": "FAIL", "memory": "FAIL"}
    assert clauses[SHOULD]["status"] == "WARN"
    assert clauses[CAP]["status"] == "SKIP"
    assert clauses[CAP]["reasons"] == ["capability savepoints not claimed by fake"]
    header = report["header"]
    assert header["target"]["name"] == "fake"
    assert header["capabilities"] == ["inline-state"]
    assert [b["name"] for b in header["backends"]] == ["local", "memory"]
    assert header["suite_version"] == __version__
    assert header["hypothesis_profile"] == "dev"

    markdown = (outcomes / "rep" / "conformance.md").read_text()
    assert "| clause | level | title | local | memory | result |" in markdown
    assert f"| {MUST2} | MUST |" in markdown

    # The terminal: run header, failure section with a repro line, clause summary.
    assert f"ckptconform {__version__}: target fake" in run.output
    assert "hypothesis profile: dev" in run.output
    assert f"clause {MUST2} (MUST)" in run.output
    # the target was imported from the working directory: the repro line puts it on the path
    assert f"repro: PYTHONPATH={outcomes.resolve()} pytest --impl=fake_target --backend=local" in (
        run.output
    )
    assert f"FAIL  {MUST2}" in run.output
    assert f"WARN  {SHOULD}" in run.output


def test_strict_should_fails_the_run(outcomes):
    write_target(outcomes)
    run, report = _run(
        outcomes,
        "--impl=fake_target",
        "--backend=local",
        "--strict-should",
        "-k",
        "should",
        "test_outcomes.py",
    )
    assert run.returncode == 1, run
    assert _tests_by_id(report)["test_should_fails[local]"]["status"] == "FAIL"


def test_should_failure_alone_does_not_fail_the_run(outcomes):
    write_target(outcomes)
    run, report = _run(
        outcomes, "--impl=fake_target", "--backend=local", "-k", "should", "test_outcomes.py"
    )
    assert run.returncode == 0, run
    assert report["clauses"][SHOULD]["status"] == "WARN"


def test_first_failure_per_clause_skips_the_failed_clauses_rest(outcomes):
    """--first-failure-per-clause: a clause's later tests are skipped once it failed (the skip
    names where); the clause stays FAIL (or WARN), and other clauses' tests still run."""
    write_target(outcomes)
    run, report = _run(
        outcomes,
        "--impl=fake_target",
        "--backend=local,memory",
        "--first-failure-per-clause",
        "-k",
        "test_fails or test_passes or test_should",
        "test_outcomes.py",
    )
    tests = _tests_by_id(report)
    assert tests["test_fails[local]"]["status"] == "FAIL"
    assert tests["test_fails[memory]"]["status"] == "SKIP"
    assert tests["test_fails[memory]"]["message"] == (
        f"--first-failure-per-clause: {MUST2} failed in test_outcomes.py::test_fails[local]"
    )
    assert tests["test_should_fails[local]"]["status"] == "WARN"
    assert tests["test_should_fails[memory]"]["status"] == "SKIP"
    assert tests["test_passes[memory]"]["status"] == "PASS"
    assert tests["test_passes[local]"]["status"] == "PASS"
    assert report["clauses"][MUST2]["status"] == "FAIL"
    assert report["clauses"][SHOULD]["status"] == "WARN"
    assert run.returncode == 1, run


def test_known_failures_are_strict_xfail(outcomes):
    write_target(outcomes, known_failures={MUST2: "not done yet", MUST: "also known"})
    run, report = _run(
        outcomes,
        "--impl=fake_target",
        "--backend=local",
        "-k",
        "test_fails or test_passes",
        "test_outcomes.py",
    )
    tests = _tests_by_id(report)
    assert tests["test_fails[local]"]["status"] == "XFAIL"
    assert "not done yet" in tests["test_fails[local]"]["message"]
    # A known failure that passes fails the run until it is removed from known_failures.
    assert tests["test_passes[local]"]["status"] == "XPASS"
    assert report["clauses"][MUST]["status"] == "XPASS"
    assert report["clauses"][MUST2]["status"] == "XFAIL"
    assert run.returncode == 1, run


def test_unsupported_scheme_skips_the_leg(outcomes):
    write_target(outcomes, schemes=["file"])
    run, report = _run(
        outcomes, "--impl=fake_target", "--backend=local,memory", "-k", "passes", "test_outcomes.py"
    )
    assert run.returncode == 0, run
    tests = _tests_by_id(report)
    assert tests["test_passes[local]"]["status"] == "PASS"
    assert tests["test_passes[memory]"]["status"] == "SKIP"
    assert (
        "backend memory (scheme memory) not supported by fake"
        in (tests["test_passes[memory]"]["message"])
    )
    run = run_pytest(
        outcomes, "--impl=fake_target", "--backend=local,memory", "--require-legs=memory"
    )
    assert run.returncode == 4, run
    assert "required leg(s) cannot run" in run.output, run


def test_require_legs_must_be_selected(outcomes):
    write_target(outcomes)
    run = run_pytest(outcomes, "--impl=fake_target", "--backend=local", "--require-legs=moto")
    assert run.returncode == 4, run
    assert "--require-legs names moto, which --backend does not select" in run.output


@pytest.mark.skipif(MinioBackend().availability() is None, reason="a Docker engine answers here")
def test_required_minio_without_docker_is_a_usage_error(outcomes):
    write_target(outcomes)
    run = run_pytest(
        outcomes, "--impl=fake_target", "--backend=local,minio", "--require-legs=minio"
    )
    assert run.returncode == 4, run
    assert "minio: no Docker engine" in run.output or "minio:" in run.output, run
    run, report = _run(
        outcomes, "--impl=fake_target", "--backend=minio", "-k", "passes", "test_outcomes.py"
    )
    assert run.returncode == 0, run
    assert _tests_by_id(report)["test_passes[minio]"]["status"] == "SKIP"
    assert _tests_by_id(report)["test_passes[minio]"]["message"].startswith("minio:")


def test_unknown_backend_and_unknown_clause_are_usage_errors(tmp_path):
    write_target(tmp_path)
    run = run_pytest(tmp_path, "--impl=fake_target", "--backend=local,floppy")
    assert run.returncode == 4, run
    assert "unknown backend 'floppy'" in run.output
    (tmp_path / "test_bad.py").write_text(
        'import pytest\n\n@pytest.mark.clause("ZZ-404")\ndef test_x():\n    pass\n'
    )
    run = run_pytest(tmp_path, "--impl=fake_target", "test_bad.py")
    assert run.returncode == 4, run
    assert "unknown clause id(s) ZZ-404" in run.output
    (tmp_path / "test_bad.py").write_text(
        dedent(
            f'''
            import pytest

            @pytest.mark.clause("{MUST}")
            @pytest.mark.requires("levitation")
            def test_x():
                pass
            '''
        )
    )
    run = run_pytest(tmp_path, "--impl=fake_target", "test_bad.py")
    assert run.returncode == 4, run
    assert "unknown capability(ies) levitation" in run.output


SANDBOX = dedent(
    f'''
    import os

    import pytest
    import s3fs

    ROOTS = {{}}

    @pytest.mark.clause("{MUST}")
    def test_sandbox(sandbox, backend, target):
        name = sandbox.root.rsplit("/", 1)[1]
        assert len(name) == 16 and name.isalnum()
        assert sandbox.root.startswith(backend.base_url + "/")
        assert sandbox.checkpoint_dir == sandbox.root + "/checkpoints"
        assert sandbox.savepoint_dir == sandbox.root + "/savepoints"
        assert sandbox.backend is backend
        storage = sandbox.make_storage(inline_threshold=0)
        assert storage.kwargs["checkpoint_dir"] == sandbox.checkpoint_dir
        assert storage.kwargs["savepoint_dir"] == sandbox.savepoint_dir
        assert storage.kwargs["options"] == {{
            "storage_options": backend.storage_options, "inline_threshold": 0
        }}
        other = sandbox.make_storage(checkpoint_dir="x", savepoint_dir=None)
        assert other.kwargs["checkpoint_dir"] == "x" and other.kwargs["savepoint_dir"] is None
        url = sandbox.root + "/a/b.bin"
        backend.raw.makedirs(sandbox.raw_path(sandbox.root + "/a"), exist_ok=True)
        backend.raw.pipe(sandbox.raw_path(url), b"data")
        assert sandbox.files() == [url]
        assert sandbox.files(sandbox.root + "/a") == [url]
        assert sandbox.read(url) == b"data"
        assert sandbox.exists(url) and not sandbox.exists(sandbox.root + "/nope")
        assert "a/b.bin (4 bytes)" in sandbox.listing(), sandbox.listing()
        assert backend.scheme == {{"local": "file", "memory": "memory", "moto": "s3"}}[backend.name]
        assert backend.object_store == (backend.name == "moto")
        assert backend.cross_process == (backend.name != "memory")
        ROOTS[backend.name] = sandbox.root

    @pytest.mark.clause("{MUST}")
    def test_previous_sandbox_was_removed(backend):
        root = ROOTS[backend.name]
        assert not backend.raw.exists(backend.raw_path(root)), root

    @pytest.mark.clause("{MUST}")
    @pytest.mark.backend_traits(ledger=True)
    def test_ledger_counts(sandbox, ledger, backend):
        fs = s3fs.S3FileSystem(skip_instance_cache=True, **backend.storage_options)
        with ledger.record() as rec:
            fs.pipe(sandbox.raw_path(sandbox.root + "/x"), b"1")
        assert rec.count(operation="PutObject") == 1, rec.summary()
        ledger.inject("GetObject", status=500, code="InternalError", times=None)
        with open(os.environ["ENDPOINT_FILE"], "w") as out:
            out.write(backend.endpoint)

    @pytest.mark.clause("{MUST}")
    @pytest.mark.backend_traits(ledger=True)
    def test_faults_are_cleared_between_tests(sandbox, backend):
        fs = s3fs.S3FileSystem(skip_instance_cache=True, **backend.storage_options)
        fs.pipe(sandbox.raw_path(sandbox.root + "/y"), b"2")
        assert fs.cat_file(sandbox.raw_path(sandbox.root + "/y")) == b"2"
    '''
)


def test_fixtures_on_every_default_backend(tmp_path, monkeypatch):
    pytest.importorskip("moto")
    (tmp_path / "test_sandbox.py").write_text(SANDBOX)
    write_target(tmp_path)
    endpoint_file = tmp_path / "endpoint.txt"
    monkeypatch.setenv("ENDPOINT_FILE", str(endpoint_file))
    run, report = _run(tmp_path, "--impl=fake_target", "test_sandbox.py")
    assert run.returncode == 0, run
    statuses = {t["nodeid"].split("::", 1)[1]: t["status"] for t in report["tests"]}
    assert statuses["test_sandbox[moto]"] == "PASS"
    assert statuses["test_ledger_counts[moto]"] == "PASS"
    assert statuses["test_faults_are_cleared_between_tests[moto]"] == "PASS"
    assert statuses["test_ledger_counts[local]"] == "SKIP"
    assert [b["name"] for b in report["header"]["backends"]] == ["local", "memory", "moto"]
    # The moto server was stopped at the end of the session.
    port = int(endpoint_file.read_text().rsplit(":", 1)[1])
    with socket.socket() as sock:
        sock.settimeout(2)
        assert sock.connect_ex(("127.0.0.1", port)) != 0


def test_installed_suite_is_collected_from_an_empty_directory(tmp_path):
    run = run_pytest(tmp_path, "--impl=ckptstore", "--backend=local", "--co", "-q")
    assert run.returncode == 0, run
    assert "test_str.py::" in run.output or "suite/test_" in run.output, run
    assert "[local]" in run.output


def test_cli_runs_pytest_and_ends_with_the_verdict(outcomes):
    """`ckptconform` writes the report (the matrix is there, not in the terminal); its output
    ends with the clause summary and the verdict."""
    import subprocess

    write_target(outcomes)
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "ckptconform.cli",
            "--impl",
            "fake_target",
            "--backend",
            "local",
            "--report-dir",
            "out",
            "-p",
            "no:cacheprovider",
            "-k",
            "passes",
            "test_outcomes.py",
        ],
        cwd=outcomes,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(outcomes), *sys.path])},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    assert "## Clause x backend" not in output
    assert output.strip().splitlines()[-1].startswith("fake: PASS — 2 clauses pass"), output
    assert (outcomes / "out" / "conformance.json").exists()
    assert "## Clause x backend" in (outcomes / "out" / "conformance.md").read_text()


def test_runs_without_impl_are_left_alone(tmp_path):
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef backend():\n    return 'mine'\n"
    )
    (tmp_path / "test_plain.py").write_text(
        "def test_own_backend_fixture(backend):\n    assert backend == 'mine'\n"
    )
    run = run_pytest(tmp_path, "-v")
    assert run.returncode == 0, run
    assert "test_own_backend_fixture PASSED" in run.output, run
    assert "ckptconform" not in run.output.split("collected")[0], run


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, "dev"),
        ({"CI": "true"}, "ci"),
        ({"CI": "0"}, "dev"),
        ({"CI": "1", "HYPOTHESIS_PROFILE": "thorough"}, "thorough"),
    ],
)
def test_default_hypothesis_profile(environ, expected):
    from ckptconform.profiles import default_profile

    assert default_profile(environ) == expected


SPARK_TESTS = dedent(
    f'''
    import pytest

    @pytest.mark.clause("{MUST}")
    def test_on_spark(spark, backend):
        pass
    '''
)


def test_spark_leg_turned_off_skips_spark_tests_with_the_reason(tmp_path):
    (tmp_path / "test_spark_tests.py").write_text(SPARK_TESTS)
    write_target(tmp_path)
    run, report = _run(
        tmp_path, "--impl=fake_target", "--backend=local", "--spark-master=none",
        "test_spark_tests.py",
    )  # fmt: skip
    assert run.returncode == 0, run
    test = _tests_by_id(report)["test_on_spark[local]"]
    assert test["status"] == "SKIP"
    assert test["message"] == "the Spark leg is turned off (--spark-master=none)"
    spark = report["header"]["spark"]
    assert spark["master"] == "none"
    assert spark["status"] == "skipped"
    assert "spark leg: SKIPPED: the Spark leg is turned off" in run.output
    markdown = (tmp_path / "rep" / "conformance.md").read_text()
    assert "- spark leg: master none: skipped (the Spark leg is turned off" in markdown


def test_required_spark_leg_that_cannot_run_is_a_usage_error(tmp_path):
    (tmp_path / "test_spark_tests.py").write_text(SPARK_TESTS)
    write_target(tmp_path)
    run = run_pytest(
        tmp_path, "--impl=fake_target", "--backend=local,spark", "--spark-master=none",
        "--require-legs=spark", "test_spark_tests.py",
    )  # fmt: skip
    assert run.returncode == 4, run
    assert "spark: the Spark leg is turned off" in run.output, run


def test_the_spark_leg_is_chosen_by_backend(tmp_path):
    """The Spark leg is a leg of --backend: a list without it starts no JVM and says so once
    in the header; requiring it there is a usage error, as for any leg not selected."""
    (tmp_path / "test_spark_tests.py").write_text(SPARK_TESTS)
    write_target(tmp_path)
    run, report = _run(tmp_path, "--impl=fake_target", "--backend=local", "test_spark_tests.py")
    assert run.returncode == 0, run
    header = run.output.split("collected")[0]
    assert header.count("spark leg: not selected (add spark to --backend)") == 1, run
    assert run.output.strip().splitlines()[-1] == (
        "fake: no clause ran — 1 skipped (need a leg this run lacks)"
    )
    test = _tests_by_id(report)["test_on_spark[local]"]
    assert (test["status"], test["message"]) == (
        "SKIP",
        "spark leg: not selected (add spark to --backend)",
    )
    assert report["header"]["spark"]["status"] == "not selected"
    assert report["header"]["spark"]["started"] is False
    markdown = (tmp_path / "rep" / "conformance.md").read_text()
    assert "- spark leg: not selected (add spark to --backend)" in markdown
    run = run_pytest(tmp_path, "--impl=fake_target", "--backend=local", "--require-legs=spark")
    assert run.returncode == 4, run
    assert "--require-legs names spark, which --backend does not select" in run.output, run


FLINK_TESTS = dedent(
    f'''
    import pytest

    @pytest.mark.clause("{MUST}")
    def test_with_flink(flink, backend):
        pass
    '''
)


def test_the_flink_leg_skips_with_its_reason_unless_required(tmp_path, monkeypatch):
    """Where Flink cannot run (here: no jars in the cache, no Java on the PATH) a test of
    Flink's loader skips with the reason; --require-legs=flink makes that a usage error,
    though --backend never names the leg."""
    (tmp_path / "test_flink_tests.py").write_text(FLINK_TESTS)
    write_target(tmp_path)
    monkeypatch.setenv("CKPTCONFORM_CACHE", str(tmp_path / "empty-cache"))
    run, report = _run(tmp_path, "--impl=fake_target", "--backend=local", "test_flink_tests.py")
    assert run.returncode == 0, run
    test = _tests_by_id(report)["test_with_flink[local]"]
    assert test["status"] == "SKIP", test
    flink = report["header"]["flink"]
    assert (flink["status"], flink["required"]) == ("skipped", False), flink
    assert test["message"] == flink["reason"] != "", test
    assert f"flink leg: SKIPPED: {flink['reason']}" in run.output, run
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "no-java-here"))
    run = run_pytest(
        tmp_path, "--impl=fake_target", "--backend=local", "--require-legs=flink",
        "test_flink_tests.py",
    )  # fmt: skip
    assert run.returncode == 4, run
    assert "flink: The flink target needs Java 11 or newer" in run.output, run


def test_help_works_whatever_impl_says(tmp_path):
    """`pytest --impl=X --help` prints the options even while X does not import."""
    run = run_pytest(tmp_path, "--impl=not_written_yet", "--help")
    assert run.returncode == 0, run
    assert "--require-legs=NAMES" in run.output, run
    assert "spark for the Spark leg (default: local,memory,moto,spark)" in " ".join(
        run.output.split()
    )


def test_spark_conf_must_be_key_value(tmp_path):
    write_target(tmp_path)
    run = run_pytest(tmp_path, "--impl=fake_target", "--backend=local", "--spark-conf=novalue")
    assert run.returncode == 4, run
    assert "--spark-conf wants KEY=VALUE" in run.output, run


OPTION_TESTS = dedent(
    f'''
    import pytest

    @pytest.mark.clause("{MUST}")
    @pytest.mark.options("inline_threshold")
    def test_needs_an_undeclared_option(backend):
        pass

    @pytest.mark.clause("{MUST}")
    @pytest.mark.options("max_state_size")
    def test_needs_a_declared_option(sandbox):
        storage = sandbox.make_storage(max_state_size=7)
        assert storage.kwargs["options"] == {{"max_state_size": 7}}

    @pytest.mark.clause("{MUST}")
    def test_needs_no_option(sandbox):
        assert sandbox.make_storage().kwargs["options"] == {{}}
    '''
)


def _declaring_target(directory: Path, options: list[str]) -> str:
    write_target(directory, "declaring_target")
    module = directory / "declaring_target.py"
    text = module.read_text().replace(
        "    known_failures = None\n", f"    known_failures = None\n    options = {options!r}\n"
    )
    module.write_text(text)
    return "declaring_target"


def test_undeclared_options_skip_with_the_reason(tmp_path):
    """A target that declares options gets only those; tests needing others are skipped."""
    pytest.importorskip("moto")
    (tmp_path / "test_options.py").write_text(OPTION_TESTS)
    module = _declaring_target(tmp_path, ["max_state_size"])
    run, report = _run(
        tmp_path, f"--impl={module}", "--backend=local,memory,moto", "-rs", "test_options.py"
    )
    assert run.returncode == 0, run
    tests = _tests_by_id(report)
    for leg in ("local", "memory"):
        assert tests[f"test_needs_an_undeclared_option[{leg}]"]["status"] == "SKIP"
        assert tests[f"test_needs_an_undeclared_option[{leg}]"]["message"] == (
            "option inline_threshold not supported by fake"
        )
        assert tests[f"test_needs_a_declared_option[{leg}]"]["status"] == "PASS"
        assert tests[f"test_needs_no_option[{leg}]"]["status"] == "PASS"
    # moto hands its endpoint over in storage_options, which the target does not declare
    assert tests["test_needs_no_option[moto]"]["status"] == "SKIP"
    assert tests["test_needs_no_option[moto]"]["message"] == (
        "backend moto passes its connection settings in option storage_options, "
        "not supported by fake"
    )
    assert "option inline_threshold not supported by fake" in run.output
    assert "  options: max_state_size" in run.output
    assert report["header"]["options"] == ["max_state_size"]


def test_option_markers_and_declarations_are_checked(tmp_path):
    (tmp_path / "test_bad_marker.py").write_text(
        dedent(
            f'''
            import pytest

            @pytest.mark.clause("{MUST}")
            @pytest.mark.options("inline_treshold")
            def test_x():
                pass
            '''
        )
    )
    write_target(tmp_path)
    run = run_pytest(tmp_path, "--impl=fake_target", "test_bad_marker.py")
    assert run.returncode == 4, run
    assert "unknown option key(s) inline_treshold" in run.output, run
    module = _declaring_target(tmp_path, ["entropy_key", "bogus"])
    run = run_pytest(tmp_path, f"--impl={module}", "--backend=local", "--co")
    assert run.returncode == 4, run
    assert "'options' names unknown option keys ['bogus']; known: storage_options" in run.output


DYING_BACKEND = dedent(
    '''
    from ckptconform.backends.local import LocalBackend

    class DyingBackend(LocalBackend):
        """A local leg whose "server" says it died (as s3rver's process can)."""

        name = "dying"
        problem = "its process exited with code 1 (on purpose)"

        def server_problem(self):
            return self.problem

    class HealthyBackend(DyingBackend):
        name = "healthy"
        problem = None
    '''
)

AFTER_A_FAILURE = dedent(
    f'''
    import pytest

    @pytest.mark.clause("{MUST2}")
    def test_a_fails(backend):
        assert False, "boom on purpose"

    @pytest.mark.clause("{MUST}")
    def test_b_after(backend):
        pass

    @pytest.mark.clause("{MUST}")
    def test_c_after(backend):
        pass
    '''
)


@pytest.mark.parametrize("backend", ["DyingBackend", "HealthyBackend"])
def test_a_server_that_stopped_answering_skips_its_legs_rest(tmp_path, backend):
    """After a failed test the plugin asks the leg's backend whether its server still
    answers: where it names a problem, the leg's later tests are skipped with one message
    saying so (printed once at the end, and the run fails by the failed test); where it does
    not, they run."""
    (tmp_path / "dying_backend.py").write_text(DYING_BACKEND)
    (tmp_path / "test_after.py").write_text(AFTER_A_FAILURE)
    write_target(tmp_path)
    run, report = _run(
        tmp_path, "--impl=fake_target", f"--backend=dying_backend:{backend}", "test_after.py"
    )
    assert run.returncode == 1, run
    statuses = {
        t["nodeid"].split("::", 1)[1].split("[", 1)[0]: t["status"] for t in report["tests"]
    }
    if backend == "HealthyBackend":
        assert statuses == {"test_a_fails": "FAIL", "test_b_after": "PASS", "test_c_after": "PASS"}
        assert "stopped answering" not in run.output, run
        return
    assert statuses == {"test_a_fails": "FAIL", "test_b_after": "SKIP", "test_c_after": "SKIP"}
    message = (
        "ckptconform: the server of the dying leg stopped answering (its process exited with "
        "code 1 (on purpose)); seen after test_after.py::test_a_fails[dying] failed: the leg's "
        "later tests are not run"
    )
    skipped = [t["message"] for t in report["tests"] if t["status"] == "SKIP"]
    assert skipped == [message, message], report["tests"]
    assert run.output.count("stopped answering") == 1, run


def test_a_run_warns_sums_up_skips_and_ends_with_the_verdict(outcomes):
    """A SHOULD failure is pytest's own category "warned" (not "xfailed") and says what was
    wrong; the skips are counted by reason instead of a line each (-rs lists them only with
    -v); the report leads with the failed clauses and their repro lines, and puts capability
    skips apart with the targets that claim them; the verdict is the last line."""
    write_target(outcomes, capabilities=["inline-state"])
    run, report = _run(outcomes, "--impl=fake_target", "--backend=local,memory", "-ra",
                       "test_outcomes.py")  # fmt: skip
    assert run.returncode == 1, run
    lines = run.output.strip().splitlines()
    assert lines[-1] == f"fake: FAIL — 1 MUST clause fails: {MUST2}", run
    (stats,) = [line for line in lines if " passed" in line and " in " in line]
    assert "2 warned" in stats, stats
    assert "xfailed" not in stats, stats
    assert "XFAIL" not in run.output, run
    assert "SKIPPED [" not in run.output, run
    assert lines.index(stats) < lines.index(f"  FAIL  {MUST2:<8} {CLAUSES[MUST2].title}")
    assert "     2  capability savepoints not claimed by fake" in lines, run
    warn_line = lines.index(f"  WARN  {SHOULD:<8} {CLAUSES[SHOULD].title}")
    assert "should-boom" in lines[warn_line + 1], run
    tests = _tests_by_id(report)
    assert "should-boom" in tests["test_should_fails[local]"]["message"]
    repro = f"PYTHONPATH={outcomes.resolve()} pytest --impl=fake_target --backend=local"
    assert tests["test_fails[local]"]["repro"].startswith(repro)

    markdown = (outcomes / "rep" / "conformance.md").read_text()
    order = [
        markdown.index(title)
        for title in (
            "## Summary",
            "## Clauses that failed",
            "## Clauses that warn",
            "## Clause x backend",
            "## Skipped: capabilities not claimed",
            "## Skipped tests, by reason",
        )
    ]
    assert order == sorted(order), markdown
    failed = markdown.split("## Clauses that failed")[1].split("## Clauses that warn")[0]
    assert f"  {repro}" in failed, failed
    unclaimed = markdown.split("## Skipped: capabilities not claimed")[1].split("\n## ")[0]
    row = next(line for line in unclaimed.splitlines() if line.startswith(f"| {CAP} |"))
    assert "| savepoints | " in row, row
    assert "`--impl=ckptstore`" in row, row
    assert "## Clauses that did not pass" not in markdown

    verbose = run_pytest(outcomes, "--impl=fake_target", "--backend=local", "-ra", "-v",
                         "-k", "capability", "test_outcomes.py")  # fmt: skip
    assert "SKIPPED [1] test_outcomes.py" in verbose.output, verbose


def test_a_spark_test_is_in_the_spark_column(tmp_path):
    """A test on the Spark leg counts in the matrix's spark column, not its backend's."""
    (tmp_path / "test_spark_tests.py").write_text(SPARK_TESTS)
    write_target(tmp_path)
    _, report = _run(tmp_path, "--impl=fake_target", "--backend=local,spark",
                     "--spark-master=none", "test_spark_tests.py")  # fmt: skip
    assert report["clauses"][MUST]["backends"] == {"local": "NOTRUN", "spark": "SKIP"}
    assert "| local | spark | result |" in (tmp_path / "rep" / "conformance.md").read_text()


def test_hypothesis_keeps_its_caches_where_its_own_setting_says(tmp_path, monkeypatch):
    """``HYPOTHESIS_STORAGE_DIRECTORY`` wins over the kit's temporary directory: runs that
    name one share the constants hypothesis reads from the code under test."""
    home = tmp_path / "hypothesis-home"
    monkeypatch.setenv("HYPOTHESIS_STORAGE_DIRECTORY", str(home))
    run = run_pytest(
        tmp_path, "--impl=ckptstore", "--backend=memory", "--spark-master=none",
        "-k", "test_threshold_boundary", "-q",
    )  # fmt: skip
    assert run.returncode == 0, run
    assert any((home / "constants").iterdir()), run
    assert not (tmp_path / ".hypothesis").exists()


def test_a_failing_property_of_the_suite_makes_no_source_patch(tmp_path):
    """hypothesis's plugin turns a failing property's examples into a patch of its test
    module; a suite test's module is the kit's own, never the user's to patch, so the kit drops
    them, and with them the libcst import (about 0.7 s of CPU per failing run) the patch costs.
    The failing example is still shown with the failure."""
    pytest.importorskip("libcst", reason="without libcst hypothesis makes no patch anyway")
    write_target(tmp_path)
    (tmp_path / "test_property.py").write_text(
        dedent(
            f'''
            from hypothesis import given, strategies as st
            import pytest

            @pytest.mark.clause("{MUST}")
            @given(st.integers())
            def test_property(n):
                assert n < 10
            '''
        )
    )
    (tmp_path / "conftest.py").write_text(
        dedent(
            """
            import sys
            from pathlib import Path

            def pytest_sessionfinish(session):
                Path("libcst-imported").write_text(str("libcst" in sys.modules))
            """
        )
    )
    run, report = _run(tmp_path, "--impl=fake_target", "--backend=memory", "test_property.py")
    assert report["clauses"][MUST]["status"] == "FAIL", run
    assert "Failing test case: test_property(" in run.output, run
    assert (tmp_path / "libcst-imported").read_text() == "False", run
