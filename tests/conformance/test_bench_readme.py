"""The README's performance table (``ckptconform.bench.readme``): every figure of issue 13 has
its row, measured or saying why not; the Flink columns come with the peer; the generated block
replaces only what lies between its markers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ckptconform.bench.goals import evaluate
from ckptconform.bench.readme import BEGIN, END, ReadmeError, readme_block, replace_block

MIB = 1 << 20


def _summary(value: float) -> dict[str, Any]:
    return {"median": value, "min": value * 0.9, "max": value * 1.1, "count": 5}


def _figure(group: str, leg: str, size: int, variants: dict[str, float], baseline: str,
            ratios: dict[str, float]) -> dict[str, Any]:  # fmt: skip
    return {
        "id": f"{group}/{leg}/{size}MiB",
        "group": group,
        "label": f"{group} {size} MiB, {leg}",
        "leg": leg,
        "size": size * MIB,
        "unit": "GiB/s",
        "baseline": baseline,
        "values": {name: _summary(v) for name, v in variants.items()},
        "ratios": {name: _summary(v) for name, v in ratios.items()},
        "error": None,
    }


def _document(*, peer: bool, suite: bool) -> dict[str, Any]:
    figures = []
    for group in ("write", "read"):
        for size in (1, 16, 256):
            local = {"target": 0.5, "fsspec+fsync": 0.49, "disk": 0.51}
            local_ratios = {"target / fsspec+fsync": 1.02, "target / disk": 0.98}
            if group == "read":
                local, local_ratios = {"target": 2.0, "fsspec": 2.0}, {"target / fsspec": 1.0}
            elif peer:
                local |= {"flink": 0.45, "java+fsync": 0.5}
                local_ratios["target / flink"] = 1.11
            baseline = "fsspec+fsync" if group == "write" else "fsspec"
            figures.append(_figure(group, "local", size, local, baseline, local_ratios))
            figures.append(
                _figure(group, "moto", size, {"target": 0.1, "fsspec": 0.1}, "fsspec",
                        {"target / fsspec": 0.99})
            )  # fmt: skip
    inline_values = {"target": 120_000.0, "io.BytesIO": 600_000.0}
    inline_ratios = {"io.BytesIO / target": 5.0}
    if peer:
        inline_values["flink"] = 180_000.0
        inline_ratios["target / flink"] = 0.66
    figures.append({
        "id": "inline", "group": "inline", "label": "inline 1000 B in 100 B writes",
        "leg": "local", "size": 1000, "unit": "states/s", "baseline": "io.BytesIO",
        "values": {n: _summary(v) for n, v in inline_values.items()},
        "ratios": {n: _summary(v) for n, v in inline_ratios.items()}, "error": None,
    })  # fmt: skip
    figures.append({
        "id": "threads", "group": "threads", "label": "32 x 4 MiB states, 1 vs 8 threads, local",
        "leg": "local", "size": 4 * MIB, "unit": "GiB/s", "baseline": None, "values": {},
        "ratios": {"target 8 / 1": _summary(1.6), "fsspec+fsync 8 / 1": _summary(1.4)},
        "error": None,
    })  # fmt: skip
    figures.append({
        "id": "threads-ramdisk", "group": "threads",
        "label": "32 x 4 MiB states, 1 vs 8 threads, ramdisk", "leg": "ramdisk",
        "size": 4 * MIB, "unit": "GiB/s", "baseline": None, "values": {},
        "ratios": {"target 8 / 1": _summary(1.3), "fsspec+fsync 8 / 1": _summary(1.7)},
        "error": None,
    })  # fmt: skip
    rss = [
        {"leg": leg, "variant": variant, "size": 1 << 30, "write_buffer": 4096,
         "growth": {"median": growth, "min": growth, "max": growth, "count": 1}, "seconds": 3}
        for leg, variant, growth in (("local", "target", 0.0), ("local", "fsspec", 0.0),
                                     ("moto", "target", 48.0), ("moto", "fsspec", 151.0))
    ]  # fmt: skip
    document: dict[str, Any] = {
        "target": {"name": "ckptstore", "spec": "ckptstore", "version": "0.1.0"},
        "quick": False,
        "machine": {
            "cpus": 2,
            "python": "3.11.7",
            "load_average": [1.0],
            "started": "now",
            "load_average_after": [2.0],
        },
        "plan": {"reps": 5, "sizes": [MIB, 16 * MIB, 256 * MIB]},
        "legs": {"local": {}, "moto": {}},
        "figures": figures,
        "rss": rss,
        "requests": {
            "leg": "moto",
            "shape": {"tasks": 8, "streams": 4},
            "rows": [
                {
                    "what": f"checkpoint {n}",
                    "kind": "checkpoint",
                    "requests": 21,
                    "minimum": 21,
                    "operations": {"PutObject": 21},
                    "completed": True,
                }
                for n in (1, 2, 3)
            ]
            + [
                {
                    "what": "restore",
                    "kind": "restore",
                    "requests": 32,
                    "minimum": 32,
                    "operations": {"GetObject": 31},
                    "completed": True,
                }
            ],
        },
        "suite": None,
        "peer": None,
        "seconds": 600.0,
    }
    if suite:
        document["suite"] = {"profile": "ci", "legs": [
            {"name": "local", "seconds": 40.0, "exit_code": 0, "summary": "1 passed in 39s"},
            {"name": "memory", "seconds": 30.0, "exit_code": 0, "summary": "1 passed in 29s"},
            {"name": "moto", "seconds": 60.0, "exit_code": 0, "summary": "1 passed in 59s"},
            {"name": "spark", "seconds": 0.0, "exit_code": 0, "summary": "",
             "skipped": "Java 17 is not installed"},
        ]}  # fmt: skip
    if peer:
        document["peer"] = {"name": "flink", "flink": "2.3.0", "java": "17.0.15"}
    return document


def _rows(block: str) -> dict[str, str]:
    return {
        line.split(" | ")[0].lstrip("| "): line
        for line in block.splitlines()
        if line.startswith("| ") and not line.startswith("| figure")
    }


def test_every_figure_of_the_issue_has_its_row() -> None:
    document = _document(peer=True, suite=True)
    block = readme_block(document, evaluate(document))
    assert block.startswith(BEGIN + "\n")
    assert block.endswith(END + "\n")
    rows = _rows(block)
    for group in ("write", "read"):
        for leg in ("local", "moto"):
            for size in (1, 16, 256):
                assert any(k.startswith(f"{group} {size} MiB, {leg}") for k in rows), (group, leg)
    expected = {
        # the ratio with its spread, the disk's limit, Flink's column and the ratio to it
        "write 16 MiB, local (fsspec+fsync)": (
            "1.02x (0.918..1.12)", "0.51", "1.11x", "0.45", ">= 0.95 x: pass",
        ),
        "inline": ("120,000", "cost 5x", "180,000", "stretch"),
        "32 x 4 MiB states, 1 vs 8 threads, local": ("1.6x", ">= 1.5 x: pass"),
        "32 x 4 MiB states, 1 vs 8 threads, ramdisk": ("1.3x", "1.7x", ">= 1.5 x: miss"),
        "peak RSS writing 1 GiB through one stream, moto": (
            "| 48.0 |", "fsspec: 151 MiB", "<= 64 MiB: pass",
        ),
        "S3 requests per checkpoint": ("21, 21, 21", "minimum: 21, 21, 21", "= the minimum: pass"),
    }  # fmt: skip
    for prefix, parts in expected.items():
        row = next(v for k, v in rows.items() if k.startswith(prefix))
        for part in parts:
            assert part in row, (part, row)
    assert any(k.startswith("S3 requests per restore") for k in rows)
    for leg in ("local", "memory", "moto", "spark"):
        assert any(k.startswith(f"suite wall time, {leg} leg") for k in rows), leg
    assert "skipped: Java 17 is not installed" in rows["suite wall time, spark leg (ci profile, s)"]
    without = rows["suite wall time without Spark (ci profile), s"]
    assert "| 130 |" in without
    assert "<= 180 s: pass" in without
    assert "Flink 2.3.0 on Java 17.0.15" in block


def test_figures_the_run_did_not_measure_say_so() -> None:
    document = _document(peer=False, suite=False)
    document["figures"] = [f for f in document["figures"] if f["leg"] != "moto"]
    document["rss"] = [e for e in document["rss"] if e["leg"] != "moto"]
    document["legs"]["moto"] = {"skipped": "moto: moto[server] is not installed"}
    document["requests"] = {"skipped": "no leg with a request ledger (add moto to --backend)"}
    block = readme_block(document, evaluate(document))
    rows = _rows(block)
    assert "moto[server] is not installed" in rows["write 256 MiB, moto"]
    assert "moto[server] is not installed" in rows["peak RSS of one large stream, moto"]
    assert "add moto to --backend" in rows["S3 requests per checkpoint"]
    assert "run with --suite" in rows["suite wall time, local leg (ci profile, s)"]
    assert "Flink" not in block.split("\n| figure", 1)[1].split("\n")[0]  # no peer columns
    assert "not run (add `--peer flink`)" in block


def test_the_block_replaces_only_what_lies_between_its_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\nbefore\n\n{BEGIN}\nold table\n{END}\n\nafter\n")
    replace_block(readme, f"{BEGIN}\nnew table\n{END}\n")
    assert readme.read_text() == f"# Title\n\nbefore\n\n{BEGIN}\nnew table\n{END}\n\nafter\n"
    readme.write_text("no markers\n")
    with pytest.raises(ReadmeError, match="no generated block"):
        replace_block(readme, "x")
