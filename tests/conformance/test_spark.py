"""The Spark leg's helpers that need no cluster (tests/meta runs the SPK clauses on a real one)."""

from __future__ import annotations

import os

import pytest

from ckptconform.spark import (
    DEFAULT_MASTER,
    SPARK_MODULES,
    SparkLeg,
    SparkUnavailableError,
    _python_error,
    is_local_master,
    parse_spark_conf,
)


def test_default_master_is_a_local_cluster_of_two_executors():
    assert DEFAULT_MASTER == "local-cluster[2,1,1024]"
    assert SparkLeg().master == DEFAULT_MASTER


@pytest.mark.parametrize(
    ("master", "local"),
    [
        ("local", True),
        ("local[2]", True),
        ("local[*]", True),
        ("local-cluster[2,1,1024]", True),
        ("spark://10.0.0.5:7077", False),
        ("yarn", False),
        ("k8s://https://api:6443", False),
    ],
)
def test_local_masters_are_recognised(master, local):
    assert is_local_master(master) is local


def test_spark_conf_parses_key_value_pairs():
    conf = parse_spark_conf(["spark.executor.memory=2g", "spark.x = a=b"])
    assert conf == {"spark.executor.memory": "2g", "spark.x": " a=b"}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_spark_conf(["spark.executor.memory"])
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_spark_conf(["=2g"])


def test_turned_off_leg_says_so_and_never_starts():
    leg = SparkLeg("none")
    assert not leg.enabled
    assert leg.availability() == "the Spark leg is turned off (--spark-master=none)"
    with pytest.raises(SparkUnavailableError, match="turned off"):
        leg.start()
    assert not leg.started
    leg.stop()  # stopping a leg that never started is fine
    info = leg.info()
    assert info["master"] == "none"
    assert info["started"] is False
    assert info["tasks"] == 0
    assert leg.describe() == "master none (started on first use)"


def test_missing_java_is_one_sentence(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    reason = SparkLeg("local[1]").availability()
    assert reason is not None
    assert reason.startswith("Spark needs Java 17 or newer")


def test_worker_errors_are_cut_to_the_python_exception():
    text = (
        "An exception was thrown from the Python worker:\n"
        "Traceback (most recent call last):\n"
        '  File "/x/worker.py", line 10, in main\n'
        "    process()\n"
        "ModuleNotFoundError: No module named 'mypkg'\n"
        "\tat org.apache.spark.api.python.BasePythonRunner(PythonRunner.scala:1)\n"
    )
    assert _python_error(text).endswith("ModuleNotFoundError: No module named 'mypkg'")


def test_the_jvms_output_goes_to_its_log_and_stderr_comes_back(tmp_path, monkeypatch, capfd):
    import subprocess
    import sys

    from ckptconform.spark import jvm_log_path
    from sparkrun import jvm_output_to

    log = tmp_path / "spark.log"
    monkeypatch.setenv("CKPTCONFORM_SPARK_LOG", str(log))
    assert jvm_log_path() == str(log)
    speak = [
        sys.executable,
        "-c",
        "import sys, time; time.sleep(0.2); print('banner', file=sys.stderr)",
    ]
    with jvm_output_to(jvm_log_path()):
        child = subprocess.Popen(speak)  # the JVM is spawned inside, and outlives the block
    print("ours", file=sys.stderr)
    child.wait(timeout=30)
    assert log.read_text() == "banner\n"
    assert capfd.readouterr().err == "ours\n"
    monkeypatch.setenv("CKPTCONFORM_SPARK_LOG", "-")
    assert jvm_log_path() is None


_RECORD = """
import os

def pytest_collection_finish(session):
    for item in session.items:
        spark = "spark" in item.fixturenames
        print("SPARK" if spark else "OTHER", item.nodeid, flush=True)

def pytest_runtest_logstart(nodeid, location):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "-")
    with open(os.environ["RECORD_TO"], "a") as out:
        out.write(f"{worker} {nodeid}\\n")
"""


def test_loadgroup_puts_the_spark_legs_tests_on_one_worker(tmp_path):
    """With ``-n 2 --dist loadgroup`` one worker runs every test on the Spark leg (one
    cluster), and the other tests spread test by test; the tests that use the leg are those
    of ``SPARK_MODULES``."""
    import subprocess
    import sys

    (tmp_path / "record_workers.py").write_text(_RECORD)
    record = tmp_path / "workers.txt"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")},
        "PYTHONPATH": str(tmp_path),
        "RECORD_TO": str(record),
    }  # this test's own xdist worker must not name the run's controller
    env.pop("PYTEST_ADDOPTS", None)
    args = ["--impl=ckptstore", "--backend=local,spark", "--spark-master=none",
            "--clauses=SPK-1,SPK-2,SPK-3,SPK-4,SPK-5,SPK-6,STR-1,SER-1", "-p", "record_workers",
            "-p", "no:cacheprovider"]  # fmt: skip
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", *args, "--co", "-q", "-s"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300, check=False,
    )  # fmt: skip
    uses = [line.split(" ", 1) for line in collected.stdout.splitlines()]
    on_spark = {use[1] for use in uses if use[0] == "SPARK"}
    assert on_spark, collected.stdout + collected.stderr
    assert {n.partition("::")[0].rpartition("/")[2] for n in on_spark} <= set(SPARK_MODULES)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args, "-n", "2", "--dist", "loadgroup"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300, check=False,
    )  # fmt: skip
    # the controller logs each test too, as "-"
    ran = [line.split(" ", 1) for line in record.read_text().splitlines() if line[0] != "-"]
    spark_workers = [worker for worker, nodeid in ran if "test_spk.py" in nodeid]
    assert len(spark_workers) > 1, done.stdout
    assert len(set(spark_workers)) == 1, done.stdout
    assert {worker for worker, _ in ran} == {"gw0", "gw1"}, done.stdout
