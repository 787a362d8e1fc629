"""The fork server runs a suite run as ``python -m pytest`` would: own directory, environment,
import path, output, exit code; and a run past its timeout is killed with what it started."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from tests.meta.forkserver import ForkServer

_TEST = """
import os, sys

def test_sees_its_own_world():
    assert os.getcwd() == os.environ["EXPECTED_CWD"]
    assert os.environ["ONLY_HERE"] == "yes"
    assert sys.path[0] == os.getcwd()
    import helper_on_pythonpath
    print("ran in", os.getpid())

def test_the_preloaded_heap_is_frozen():
    import gc
    # the server's imports are out of the collector's way (gc.freeze before the fork)
    assert gc.get_freeze_count() > 10_000

def test_fails():
    assert os.environ.get("MAKE_IT_FAIL") != "1"
"""


@pytest.fixture
def server():
    forks = ForkServer()
    yield forks
    forks.stop()


def _world(tmp_path, **extra):
    (tmp_path / "test_world.py").write_text(_TEST)
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "helper_on_pythonpath.py").write_text("")
    env = {k: v for k, v in os.environ.items() if k not in {"PYTEST_ADDOPTS", "ONLY_HERE"}}
    env.update(EXPECTED_CWD=str(tmp_path), ONLY_HERE="yes", PYTHONPATH=str(lib), **extra)
    return env


def test_a_run_gets_its_directory_environment_path_and_exit_code(server, tmp_path):
    env = _world(tmp_path)
    code, output = server.run(["-p", "no:cacheprovider", "-q", "-s"], tmp_path, env, 60)
    assert code == 0, output
    assert "3 passed" in output
    assert "ONLY_HERE" not in os.environ  # the server's child changed only its own world
    code, output = server.run(
        ["-p", "no:cacheprovider", "-q"], tmp_path, {**env, "MAKE_IT_FAIL": "1"}, 60
    )
    assert code == 1, output
    assert "1 failed, 2 passed" in output


def test_a_run_past_its_timeout_is_killed(server, tmp_path):
    (tmp_path / "test_hang.py").write_text("import time\ndef test_hang():\n    time.sleep(600)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        server.run(["-p", "no:cacheprovider", "-q"], tmp_path, env, 3)
    assert time.monotonic() - started < 30
    code, output = server.run(["-p", "no:cacheprovider", "-q", "--co"], tmp_path, env, 60)
    assert code == 0, output  # the server serves the next run
