"""The Spark leg's helpers that need no cluster (tests/meta runs the SPK clauses on a real one)."""

from __future__ import annotations

import pytest

from ckptconform.spark import (
    DEFAULT_MASTER,
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
