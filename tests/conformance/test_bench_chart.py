"""``bench.png``, the bench's verdict line and the plain progress lines of a piped run."""

from __future__ import annotations

import pytest

from ckptconform import progress
from ckptconform.bench import output
from ckptconform.bench.goals import verdict_line
from ckptconform.bench.stats import AT_MOST, Goal, Summary, check
from ckptconform.progress import Progress

MIB = 1 << 20


def _value(median: float) -> dict[str, float]:
    return {"median": median, "min": median * 0.9, "max": median * 1.1, "count": 3}


def _figure(group: str, leg: str, size: int, label: str, **values: float) -> dict[str, object]:
    return {
        "group": group,
        "leg": leg,
        "size": size,
        "label": label,
        "unit": "GiB/s",
        "error": None,
        "values": {
            name.replace("_", "+").replace("X", " x"): _value(v) for name, v in values.items()
        },
    }


DOCUMENT = {
    "target": {"name": "ckptstore"},
    "quick": True,
    "plan": {"reps": 3},
    "figures": [
        _figure("write", "local", MIB, "write 1 MiB, local",
                target=0.5, fsspec_fsync=0.5, fsspec=3.5),
        _figure("write", "local", 16 * MIB, "write 16 MiB, local", target=0.6, fsspec_fsync=0.6),
        _figure("read", "local", MIB, "read 1 MiB, local", target=11.0, fsspec=12.0),
        {**_figure("inline", "local", 1000, "inline 1000 B in 100 B writes", target=2e5),
         "unit": "states/s"},
        _figure("threads", "local", 4 * MIB, "32 x 4 MiB states, 1 vs 8 threads, local",
                targetX1=0.4, targetX8=0.5, fsspec_fsyncX1=0.4, fsspec_fsyncX8=0.5),
        _figure("threads", "ramdisk", 4 * MIB, "32 x 4 MiB states, 1 vs 8 threads, ramdisk",
                targetX1=1.6, targetX8=2.9),
    ],
    "rss": [
        {"leg": "local", "variant": "target", "size": 1024 * MIB, "write_buffer": 4096,
         "growth": _value(0.0)},
        {"leg": "moto", "variant": "fsspec", "size": 1024 * MIB, "write_buffer": 4096,
         "growth": _value(151.0)},
    ],
}  # fmt: skip


def test_panels_name_each_tick_in_full():
    panels = output.chart_panels(DOCUMENT)
    assert [p.title for p in panels] == [
        "file-backed write, local (GiB/s)",
        "file-backed read, local (GiB/s)",
        "inline path (states/s)",
        "32 x 4 MiB states, 1 vs 8 threads (GiB/s)",
        "peak RSS growth writing 1024 MiB through one stream (MiB)",
    ]
    write, _, inline, threads, rss = panels
    assert write.ticks == ["1 MiB", "16 MiB"]
    assert write.values["fsspec"][1] is None  # not measured at 16 MiB: no bar, no gap filler
    assert inline.ticks == ["1000 B in 100 B writes"]
    assert threads.ticks == ["local", "ramdisk"]
    assert rss.ticks == ["local", "moto"]
    assert rss.values["target"][0]["median"] == 0.0  # drawn and labelled "0"
    assert rss.bound == (64.00390625, "bound 64 MiB")


def test_a_variant_keeps_its_colour_in_every_panel():
    panels = output.chart_panels(DOCUMENT)
    colours = output._colours(panels)
    assert colours == {"target": "tab:blue", "fsspec+fsync": "tab:orange", "fsspec": "tab:green"}
    assert output._base("fsspec+fsync x8") == ("fsspec+fsync", 8)
    counts = output._thread_counts(panels)
    assert counts == [1, 8]
    assert output._hatch("target x1", counts) == "///"
    assert output._hatch("target x8", counts) is None
    assert output._hatch("target", counts) is None


def test_the_chart_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    path = output.write_plot(DOCUMENT, tmp_path / "bench.png")
    assert path is not None
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _gated(excess: float) -> list:
    return [
        check("S3 requests per checkpoint above the minimum (moto)", Summary.of([excess]),
              Goal(AT_MOST, 0, "requests", gated=True)),
        check("peak RSS writing 1024 MiB, local: above baseline", Summary.of([0.0]),
              Goal(AT_MOST, 64, "MiB", gated=True)),
    ]  # fmt: skip


def test_verdict_line_says_pass_or_fail_and_why():
    assert verdict_line(_gated(0), []) == (
        "bench: PASS: S3 requests per checkpoint at the minimum and peak RSS within the write "
        "buffer + 64 MiB; ratios are reported, never gated."
    )
    failing = verdict_line(_gated(3), ["peak RSS, moto: the child died"])
    assert failing.startswith("bench: FAIL: S3 requests per checkpoint above the minimum (moto): 3")
    assert failing.endswith(" (and 1 more above).")
    assert verdict_line([], []).startswith("bench: PASS: nothing gated was measured")


def test_piped_progress_prints_plain_lines(capsys, monkeypatch):
    monkeypatch.setattr(progress, "PLAIN_EVERY", 3600.0)
    with Progress("bench", 4) as steps:
        steps.advance("write 1 MiB, local")
        steps.advance("write 16 MiB, local", failed=True)
        steps.advance("read 1 MiB, local")
        steps.advance("S3 requests per checkpoint")
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "bench: 4 steps (0 s)",
        "bench: 2/4 write 16 MiB, local failed (0 s)",
        "bench: 4/4 S3 requests per checkpoint (0 s)",
    ]
    monkeypatch.setattr(progress, "PLAIN_EVERY", 0.0)
    with Progress("budget", 2) as steps:
        steps.advance("setup")
    assert capsys.readouterr().err.splitlines()[1] == "budget: 1/2 setup (0 s)"
