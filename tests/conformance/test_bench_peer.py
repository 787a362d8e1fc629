"""``ckptconform bench --peer flink``: the driver's answers, what Flink syncs in words, the
Flink variants in the figures (with a stand-in peer, no JVM), the side-by-side section and the
stretch target; one sentence without Java; and, when Java 17, a JDK and Flink's cached jars are
here, the real peer end to end (the protocol, then the command)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ckptconform.bench.goals import evaluate
from ckptconform.bench.measure import Bench, Leg, Plan
from ckptconform.bench.output import peer_sections, sections
from ckptconform.bench.peer import (
    FlinkPeer,
    PeerError,
    PeerUnavailableError,
    parse_reply,
    seconds_of,
    sync_note,
)

MIB = 1 << 20

PROBE = {
    "file_backed": {"files": 1, "flush": 0, "sync": 1, "close": 1},
    "inline": {"files": 0, "flush": 0, "sync": 0, "close": 0},
    "local_stream": "org.apache.flink.core.fs.local.LocalDataOutputStream",
}


# --------------------------------------------------------------------------- answers


def test_answers_are_json_objects_and_errors_raise():
    assert parse_reply('{"seconds": 0.25}') == {"seconds": 0.25}
    assert seconds_of(parse_reply('{"seconds": 2}')) == 2.0
    with pytest.raises(PeerError, match="Flink driver: IOException: disk full"):
        parse_reply('{"error": "IOException: disk full"}')
    with pytest.raises(PeerError, match="not JSON"):
        parse_reply("Exception in thread main")
    with pytest.raises(PeerError, match="not an object"):
        parse_reply("[1, 2]")
    for bad in ({}, {"seconds": -1.0}, {"seconds": True}, {"seconds": "1"}):
        with pytest.raises(PeerError, match="no seconds"):
            seconds_of(bad)


def test_what_flink_syncs_follows_the_probe():
    synced = sync_note(PROBE)
    assert synced.startswith("Flink fsyncs every file-backed state")
    assert "LocalDataOutputStream" in synced
    assert "FLINK-36421" in synced
    assert "inline state writes no file" in synced
    unsynced = sync_note({**PROBE, "file_backed": {"files": 2, "sync": 0}})
    assert unsynced.startswith("Flink does not sync file-backed state (0 sync() for 2")
    assert "compare it with fsspec, not fsspec+fsync" in unsynced
    assert sync_note(None) == "not probed"


# --------------------------------------------------------------------------- figures


class StandInPeer:
    """The peer's interface without a JVM: fixed seconds per request, the calls recorded."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.error: str | None = None
        self.probe: dict[str, Any] | None = None
        self.fail_after = fail_after

    def open(self, directory: str, threshold: int, write_buffer: int) -> dict[str, Any]:
        self.calls.append(("open", directory, threshold, write_buffer))
        return {"ok": True}

    def run_probe(self) -> dict[str, Any]:
        self.probe = PROBE
        return PROBE

    def warm_up(self, seconds: float) -> float:
        self.calls.append(("warmup", seconds))
        return seconds

    def _timed(self, *call: Any) -> float:
        self.calls.append(call)
        timed = [c for c in self.calls if c[0] in ("write", "raw", "inline")]
        if self.fail_after is not None and len(timed) > self.fail_after:
            raise PeerError("the Flink driver's JVM ended")
        return 0.5

    def write(self, size: int, count: int, chunk: int) -> float:
        return self._timed("write", size, count, chunk)

    def raw_write(self, size: int, count: int, chunk: int) -> float:
        return self._timed("raw", size, count, chunk)

    def inline(self, size: int, write: int, count: int) -> float:
        return self._timed("inline", size, write, count)


class _Stream:
    def __init__(self) -> None:
        self.size = 0

    def write(self, data: bytes) -> None:
        self.size += len(data)

    def close_and_get_handle(self) -> Any:
        return SimpleNamespace(discard_state=lambda: None, size=self.size)

    def close(self) -> None:
        pass


class _Location:
    def create_checkpoint_state_output_stream(self, scope: Any) -> _Stream:
        return _Stream()


def _local_leg(tmp_path: Path) -> Leg:
    import fsspec

    leg = Leg("local", SimpleNamespace(object_store=False, scheme="file"), None, {})
    leg.root = str(tmp_path)
    leg.location = _Location()
    leg.raw = fsspec.filesystem("file", skip_instance_cache=True)
    leg.raw_dir = leg.local_dir = str(tmp_path / "raw")
    os.makedirs(leg.raw_dir)
    return leg


def _bench(tmp_path: Path, peer: StandInPeer) -> Bench:
    plan = Plan(sizes=(MIB,), reps=3, threads=1, inline_seconds=0.01, peer_warmup=0.5)
    bench = Bench(plan, [_local_leg(tmp_path)], inline=True, peer=peer)
    bench.build()
    bench.run()
    return bench


def test_the_peer_is_one_more_variant_of_the_local_writes_and_the_inline_path(tmp_path):
    peer = StandInPeer()
    bench = _bench(tmp_path, peer)
    assert peer.calls[0] == ("open", str(tmp_path / "flink"), 1024, 4096)
    assert ("warmup", 0.5) in peer.calls
    figures = {f.id: f.to_json() for f in bench.figures}
    write = figures["write/local/1MiB"]
    assert write["error"] is None
    assert set(write["values"]) == {"target", "fsspec+fsync", "fsspec", "disk", "flink",
                                    "java+fsync"}  # fmt: skip
    assert write["seconds"]["flink"] == [0.5] * 3  # one sample per repetition
    assert write["values"]["flink"]["median"] == pytest.approx(16 * MIB / 0.5 / (1 << 30))
    assert write["ratio_variants"]["target / flink"] == ["target", "flink"]
    assert write["ratios"]["target / flink"]["count"] == 3
    # 16 states of 1 MiB in 1 MiB writes per repetition, as the target's batch
    assert ("write", MIB, 16, MIB) in peer.calls
    assert ("raw", MIB, 16, MIB) in peer.calls
    inline = figures["inline"]
    assert inline["values"]["flink"]["count"] == 3
    assert ("inline", 1000, 100, int(inline["amount"])) in peer.calls
    assert "target / flink" in inline["ratios"]
    assert "read/local/1MiB" in figures
    assert "flink" not in figures["read/local/1MiB"]["values"]
    checks = {c.name: c for c in evaluate({"figures": list(figures.values())})}
    stretch = checks["inline 1000 B in 100 B writes: target / flink (stretch)"]
    assert stretch.goal.threshold == 1.0
    assert not stretch.gated


def test_a_failing_peer_ends_its_own_variants_not_the_figure(tmp_path):
    peer = StandInPeer(fail_after=2)
    bench = _bench(tmp_path, peer)
    assert peer.error == "PeerError: the Flink driver's JVM ended"
    write = next(f for f in bench.figures if f.id == "write/local/1MiB").to_json()
    assert write["error"] is None
    assert len(write["seconds"]["target"]) == 3
    assert len(write["seconds"].get("flink", [])) < 3
    assert "target / flink" not in write["ratios"]  # unpaired samples give no ratio


def test_no_local_leg_means_no_peer_variants(tmp_path):
    peer = StandInPeer()
    leg = _local_leg(tmp_path)
    leg.local_dir = None
    bench = Bench(Plan(sizes=(MIB,), reps=3, threads=1), [leg], inline=False, peer=peer)
    bench.build()
    bench.cleanup()
    assert peer.error == "the peer writes to the local file system: add local to --backend"
    assert all("flink" not in [c.variant for c in cases] for cases in bench.groups)


# --------------------------------------------------------------------------- output


def _summary(median: float) -> dict[str, float]:
    return {"median": median, "min": median * 0.9, "max": median * 1.1, "count": 3}


def test_the_side_by_side_section_and_the_peer_note():
    document = {
        "target": {"name": "ckptstore"},
        "peer": {
            "name": "flink", "flink": "2.3.0", "java": "17.0.15", "vm": "OpenJDK",
            "what": "FsCheckpointStreamFactory, timed inside the JVM", "threshold": 1024,
            "write_buffer": 4096, "probe": PROBE, "syncs": sync_note(PROBE),
        },
        "figures": [
            {
                "label": "write 16 MiB, local", "unit": "GiB/s", "error": None,
                "values": {"target": _summary(0.5), "flink": _summary(0.4),
                           "java+fsync": _summary(0.45)},
                "ratios": {"target / flink": _summary(1.25)},
            },
            {
                "label": "write 16 MiB, moto", "unit": "GiB/s", "error": None,
                "values": {"target": _summary(0.3)}, "ratios": {},
            },
        ],
    }  # fmt: skip
    about, side = peer_sections(document)
    assert about[0] == "Peer: flink"
    rows = dict(about[2])
    assert rows["Flink"] == "2.3.0 on Java 17.0.15 (OpenJDK)"
    assert rows["what Flink syncs"].startswith("Flink fsyncs every file-backed state")
    title, headers, figure_rows = side
    assert title == "ckptstore vs Flink 2.3.0 in the same run (medians, min..max)"
    assert headers[:4] == ("figure", "target", "flink", "target / flink")
    assert figure_rows == [
        ("write 16 MiB, local", "0.5 (0.45..0.55)", "0.4 (0.36..0.44)", "1.25x (1.12..1.38)",
         "0.45 (0.405..0.495)", "GiB/s")
    ]  # fmt: skip
    assert [s[0] for s in sections(document, [])][:1] == ["Figures"]


def test_a_peer_that_did_not_run_says_why():
    document = {"peer": {"name": "flink", "skipped": "--peer flink needs Java 17 or newer."}}
    (title, _, rows), *rest = peer_sections(document)
    assert title == "Peer: flink"
    assert rows == [("not run", "--peer flink needs Java 17 or newer.")]
    assert rest == []
    assert peer_sections({"peer": None}) == []


# --------------------------------------------------------------------------- no Java


def test_without_java_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(PeerUnavailableError) as caught:
        FlinkPeer().start()
    message = str(caught.value)
    assert message == (
        "--peer flink needs Java 17 or newer on the PATH (or in JAVA_HOME); no java was found."
    )


def _run_bench(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "ckptconform.cli", "bench", "--impl=ckptstore", "--backend=local",
         "--sizes=1", "--reps=3", "--threads=1", "--no-rss", "--no-requests", "--no-plot",
         "--peer=flink", f"--out={tmp_path / 'out'}", *args],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
        env=env if env is not None else dict(os.environ),
    )  # fmt: skip


@pytest.mark.timeout(120)
def test_the_bench_runs_without_the_peer_when_java_is_missing(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}
    env.pop("JAVA_HOME", None)
    run = _run_bench(tmp_path, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "The bench runs without the peer." in run.stderr
    document = json.loads((tmp_path / "out" / "bench.json").read_text())
    assert document["peer"]["skipped"].startswith("--peer flink needs")
    write = next(f for f in document["figures"] if f["id"] == "write/local/1MiB")
    assert "flink" not in write["values"]
    assert "target" in write["values"]
    assert "not run" in run.stdout


# --------------------------------------------------------------------------- the real peer


def _real_peer_reason() -> str | None:
    from ckptconform import flink_jars as jars
    from sparkrun import java_major_version

    major = java_major_version()
    if major is None or major < 17:
        return f"--peer flink needs Java 17 (found {major})"
    if shutil.which("javac") is None and not os.environ.get("JAVA_HOME"):
        return "no javac (a JDK) to compile the driver"
    if jars.cached_jars() is None:
        return f"Flink's jars are not cached in {jars.cache_dir()} (no download in tests)"
    return None


REAL_PEER = _real_peer_reason()
needs_real_peer = pytest.mark.skipif(REAL_PEER is not None, reason=f"{REAL_PEER}")


@needs_real_peer
@pytest.mark.timeout(120)
def test_the_real_peer_answers_and_fsyncs_every_file_backed_state(tmp_path):
    peer = FlinkPeer().start()
    try:
        assert peer.hello["flink"] == "2.3.0"
        assert peer.open(str(tmp_path / "flink"), 1024, 4096) == {
            "ok": True, "threshold": 1024, "buffer": 4096
        }  # fmt: skip
        probe = peer.run_probe()
        assert probe["file_backed"] == {"files": 1, "flush": 0, "sync": 1, "close": 1}
        assert probe["file_backed_handle"] == "RelativeFileStateHandle"
        assert probe["inline"]["files"] == 0
        assert probe["inline_handle"] == "ByteStreamStateHandle"
        assert peer.write(MIB, 2, MIB) > 0
        assert peer.raw_write(MIB, 2, MIB) > 0
        assert peer.inline(1000, 100, 500) > 0
        with pytest.raises(PeerError, match="unknown command"):
            peer.request("bogus")
        with pytest.raises(PeerError, match="at least 1 byte"):
            peer.write(MIB, 1, 0)  # a zero-byte write is refused, the JVM keeps running
        assert peer.inline(1000, 100, 10) > 0
        # states are discarded after timing: only the directories are left
        left = [p for p in (tmp_path / "flink").rglob("*") if p.is_file()]
        assert left == []
        assert peer.describe()["syncs"].startswith("Flink fsyncs every file-backed state")
    finally:
        peer.close()
    assert peer.process is None


@needs_real_peer
@pytest.mark.timeout(120)
def test_the_command_with_the_real_peer(tmp_path):
    run = _run_bench(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    document = json.loads((tmp_path / "out" / "bench.json").read_text())
    peer = document["peer"]
    assert "error" not in peer, peer
    assert peer["flink"] == "2.3.0"
    assert peer["probe"]["file_backed"]["sync"] == 1
    figures = {f["id"]: f for f in document["figures"]}
    write = figures["write/local/1MiB"]
    assert len(write["seconds"]["flink"]) == 3
    assert len(write["seconds"]["java+fsync"]) == 3
    assert write["ratios"]["target / flink"]["count"] == 3
    assert figures["inline"]["values"]["flink"]["median"] > 0
    markdown = (tmp_path / "out" / "bench.md").read_text()
    assert "## ckptstore vs Flink 2.3.0 in the same run" in markdown
    assert "Flink fsyncs every file-backed state" in markdown
