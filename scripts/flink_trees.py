"""Real checkpoint trees from real Flink 2.3.0 jobs, packed as fixtures with Flink's truth.

    PYTHONPATH=reference:conformance:targets python scripts/flink_trees.py [--tree NAME]...

Each tree is one root, ``/tmp/ckptconform-flink-trees/<tree>`` (Flink writes absolute
``file:/`` paths into ``_metadata``, so the root is fixed and recorded), with ``checkpoints/``
and ``savepoints/`` beneath it. The jobs of a tree (``scripts/flink_trees/FlinkTreesJob.java``,
compiled here against Flink's jars from ``ckptconform.flink_jars``) run one after another on a
local MiniCluster, each in its own JVM, and follow their actions: wait for checkpoints, take
savepoints, stall a checkpoint, cancel, or halt the JVM (a crash, so nothing is cleaned up).

Then Flink itself (``Checkpoints.loadCheckpointMetadata`` through ``flinktarget.metadata``)
loads every ``_metadata`` under the root, and ``MANIFEST.json`` records the truth a tool must
find: every checkpoint and savepoint directory, completed or in flight, the files each
completed one references (paths relative to the root, with sizes and the bytes its handles
need), the handle classes it holds, and the orphans (files under the root that no completed
checkpoint or savepoint references, their ``_metadata`` aside). The archive
``fixtures/flink/flink-2.3.0-<tree>.tar.gz`` holds ``MANIFEST.json`` and the root's contents,
empty directories included. The existing ``<tree>`` directory under the fixed root is replaced.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[1]
JOB_SOURCE = REPO / "scripts" / "flink_trees" / "FlinkTreesJob.java"
ROOT = Path("/tmp/ckptconform-flink-trees")
OUT = REPO / "fixtures" / "flink"
MANIFEST_FORMAT = 1
JOB_TIMEOUT_S = 300

LOG4J = """rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.name = stderr
appender.stderr.type = Console
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{HH:mm:ss,SSS} %-5p %c{1} - %m%n
"""


@dataclass(frozen=True)
class Job:
    """One run of FlinkTreesJob: its topology, Flink options and actions (module docstring)."""

    name: str
    topology: str
    options: dict[str, str]
    actions: tuple[str, ...]
    #: restore from the latest completed checkpoint of this earlier job, in CLAIM mode
    claim_from: str | None = None


@dataclass(frozen=True)
class Tree:
    name: str
    description: str
    jobs: tuple[Job, ...] = field(default_factory=tuple)


#: RocksDB incremental; small SST files go to shared/ as files, CURRENT and tiny state inline
ROCKSDB = {
    "state.backend.type": "rocksdb",
    "execution.checkpointing.incremental": "true",
    "execution.checkpointing.data-inline-threshold": "512b",
    "flinktrees.payload-bytes": "64",
    "flinktrees.rate": "50",
}
#: unaligned checkpoints under backpressure; small network buffers keep channel state small
UNALIGNED = {
    "execution.checkpointing.unaligned.enabled": "true",
    "execution.checkpointing.aligned-checkpoint-timeout": "0s",
    "taskmanager.memory.segment-size": "4kb",
    "flinktrees.rate": "5000",
    "flinktrees.sleep-ms": "2",
}


#: where the MiniCluster listens (loopback only); not recorded: it changes no state
LOCAL_ONLY = {
    "rest.bind-address": "127.0.0.1",
    "rest.address": "127.0.0.1",
    "rest.bind-port": "0",
    "jobmanager.bind-host": "127.0.0.1",
    "taskmanager.bind-host": "127.0.0.1",
    "taskmanager.host": "127.0.0.1",
}


def _options(root: Path, *layers: dict[str, str]) -> dict[str, str]:
    """The options every job shares under ``root``, then ``layers`` in order."""
    options = {
        "parallelism.default": "2",
        "execution.checkpointing.interval": "1s",
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        "execution.checkpointing.storage": "filesystem",
        "execution.checkpointing.dir": (root / "checkpoints").as_uri(),
        "execution.checkpointing.savepoint-dir": (root / "savepoints").as_uri(),
        "flinktrees.keys": "8",
    }
    for layer in layers:
        options.update(layer)
    return options


def trees() -> dict[str, Tree]:
    """The trees this script makes, by name."""
    rocks = ROOT / "rocksdb-incremental"
    unaligned = ROOT / "hashmap-unaligned"
    merging_options = _options(
        ROOT / "file-merging",
        ROCKSDB,
        UNALIGNED,
        {
            "execution.checkpointing.file-merging.enabled": "true",
            "execution.checkpointing.num-retained": "2",
        },
    )
    made = [
        Tree(
            "rocksdb-incremental",
            "RocksDB incremental checkpoints sharing files in shared/, a canonical and a native "
            "savepoint, a checkpoint left in flight by a crash, and a second job restored from "
            "the first one's latest checkpoint in CLAIM mode",
            (
                Job(
                    "first",
                    "keyed",
                    _options(rocks, ROCKSDB, {"execution.checkpointing.num-retained": "3"}),
                    (
                        "checkpoints 3",
                        "savepoint canonical",
                        "savepoint native",
                        "checkpoints 2",
                        "stall",
                        "halt",
                    ),
                ),
                Job(
                    "claimed",
                    "keyed",
                    _options(rocks, ROCKSDB, {"execution.checkpointing.num-retained": "2"}),
                    ("checkpoints 3", "cancel"),
                    claim_from="first",
                ),
            ),
        ),
        Tree(
            "hashmap-unaligned",
            "HashMap full checkpoints with the default inline threshold (keyed state in files, "
            "small operator state inline), unaligned under backpressure so channel state is "
            "captured, a canonical savepoint and a checkpoint left in flight by a crash",
            (
                Job(
                    "unaligned",
                    "backpressure",
                    _options(
                        unaligned,
                        UNALIGNED,
                        {
                            "state.backend.type": "hashmap",
                            "execution.checkpointing.num-retained": "2",
                            "flinktrees.payload-bytes": "6000",
                        },
                    ),
                    ("checkpoints 3", "savepoint canonical", "checkpoints 1", "stall", "halt"),
                ),
            ),
        ),
        Tree(
            "file-merging",
            "checkpoint file merging (segments of shared and task-owned files): RocksDB "
            "incremental, unaligned under backpressure, a native savepoint, cancelled; then a "
            "second job restored from its latest checkpoint in CLAIM mode, cancelled",
            (
                Job(
                    "merging",
                    "backpressure",
                    merging_options,
                    ("checkpoints 3", "savepoint native", "checkpoints 2", "cancel"),
                ),
                Job(
                    "merging-claimed",
                    "backpressure",
                    merging_options,
                    ("checkpoints 2", "cancel"),
                    claim_from="merging",
                ),
            ),
        ),
    ]
    return {tree.name: tree for tree in made}


# --- running the jobs -------------------------------------------------------------------------


def compile_job(scratch: Path) -> str:
    """FlinkTreesJob compiled against Flink's jars; the class path that runs it."""
    from ckptconform.flink_jars import ensure_jars

    jars = [str(p) for p in ensure_jars()]
    classes = scratch / "classes"
    classes.mkdir()
    subprocess.run(
        ["javac", "-d", str(classes), "-cp", os.pathsep.join(jars), str(JOB_SOURCE)],
        check=True,
        timeout=300,
    )
    return os.pathsep.join([*jars, str(classes)])


def run_job(
    job: Job, options: dict[str, str], classpath: str, scratch: Path
) -> list[dict[str, Any]]:
    """Run one job to its end; the events it printed (``FLINKTREES {json}`` lines)."""
    work = scratch / job.name
    (work / "io").mkdir(parents=True)
    config = work / "flink.properties"
    runtime = {
        **LOCAL_ONLY,
        "io.tmp.dirs": str(work / "io"),
        "web.upload.dir": str(work),
        **options,
    }
    config.write_text("".join(f"{k}={v}\n" for k, v in sorted(runtime.items())))
    log4j = scratch / "log4j2.properties"
    log4j.write_text(LOG4J)
    command = [
        "java",
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp",
        classpath,
        "FlinkTreesJob",
        str(config),
        job.topology,
        str(work / "control"),
        *(word for action in job.actions for word in action.split()),
    ]
    with open(work / "stderr.log", "w") as stderr:
        done = subprocess.run(
            command, stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=JOB_TIMEOUT_S
        )
    events = [
        json.loads(line.split(" ", 1)[1])
        for line in done.stdout.splitlines()
        if line.startswith("FLINKTREES ")
    ]
    if done.returncode != 0 or not events or events[-1]["event"] not in ("done", "halt"):
        tail = (work / "stderr.log").read_text().splitlines()[-30:]
        raise RuntimeError(
            f"job {job.name} failed (exit {done.returncode}); events {events}; " + "\n".join(tail)
        )
    return events


def latest_completed(checkpoints: Path, job_id: str) -> Path:
    """The newest chk-N of a job that holds a _metadata."""
    done = [p for p in (checkpoints / job_id).glob("chk-*") if (p / "_metadata").is_file()]
    if not done:
        raise RuntimeError(f"job {job_id} left no completed checkpoint")
    return max(done, key=lambda p: int(p.name[4:]))


def run_tree(tree: Tree, classpath: str, scratch: Path) -> list[dict[str, Any]]:
    """Run the tree's jobs on a fresh root; what each job was and did, for the manifest."""
    root = ROOT / tree.name
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    records: list[dict[str, Any]] = []
    ids: dict[str, str] = {}
    for job in tree.jobs:
        options = dict(job.options)
        restored = None
        if job.claim_from is not None:
            restored = latest_completed(root / "checkpoints", ids[job.claim_from])
            options["execution.state-recovery.path"] = restored.as_uri()
            options["execution.state-recovery.claim-mode"] = "CLAIM"
        started = time.monotonic()
        events = run_job(job, options, classpath, scratch / tree.name)
        ids[job.name] = events[0]["job_id"]
        records.append(
            {
                "name": job.name,
                "job_id": ids[job.name],
                "topology": job.topology,
                "actions": list(job.actions),
                "config": options,
                "restored_from": None if restored is None else str(restored.relative_to(root)),
                "events": events,
                "seconds": round(time.monotonic() - started, 1),
            }
        )
    return records


# --- Flink's truth ------------------------------------------------------------------------------


def _relative(url: str, root: Path) -> str:
    path = urlparse(url).path if url.startswith("file:") else url
    resolved = Path(os.path.normpath(path))
    if not resolved.is_relative_to(root):
        raise RuntimeError(f"a handle names {url}, outside the tree's root {root}")
    return str(resolved.relative_to(root))


def flink_truth(root: Path, directory: Path) -> dict[str, Any]:
    """What Flink's loader says ``directory/_metadata`` holds and references."""
    from flinktarget import metadata as flink

    data = (directory / "_metadata").read_bytes()
    loaded = flink.load(data, directory.as_uri())
    summary = flink.summary(loaded)
    needed: dict[str, list[Any]] = {}
    inline = 0
    for entry in summary["streams"]:
        kind = entry[0]
        if kind == "bytes":
            inline += entry[2]
            continue
        if kind == "file":
            url, extent, relative = entry[1], entry[2], False
        elif kind == "relative":
            url, extent, relative = entry[3], entry[2], True
        elif kind == "segment":
            url, extent, relative = entry[1], entry[2] + entry[3], False
        else:
            continue
        item = needed.setdefault(_relative(url, root), [0, 0, relative])
        item[0] = max(item[0], extent)
        item[1] += 1
    files = []
    for path, (extent, count, relative) in sorted(needed.items()):
        size = (root / path).stat().st_size if (root / path).is_file() else None
        files.append(
            {
                "path": path,
                "size": size,
                "needed_bytes": extent,
                "handles": count,
                "relative": relative,
            }
        )
    return {
        "checkpoint_id": summary["checkpoint_id"],
        # every referenced file is there and holds the bytes its handles need
        "intact": all(f["size"] is not None and f["size"] >= f["needed_bytes"] for f in files),
        "metadata_size": len(data),
        "operators": len(summary["operators"]),
        "inline_bytes": inline,
        "files": files,
        "handle_classes": dict(sorted(flink.handle_classes(loaded).items())),
    }


def manifest(tree: Tree, jobs: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    """The tree's MANIFEST.json (module docstring)."""
    from ckptconform.flink_jars import FLINK_VERSION

    root = ROOT / tree.name
    job_of = {job["job_id"]: job["name"] for job in jobs}
    short = {job["job_id"][:6]: job["name"] for job in jobs}
    entries = []
    for directory in sorted(p for p in root.rglob("*") if p.is_dir()):
        parent = directory.parent
        if directory.name.startswith("chk-") and parent.parent == root / "checkpoints":
            kind, job_id = "checkpoint", parent.name
            job = job_of.get(job_id)
        elif directory.name.startswith("savepoint-") and parent == root / "savepoints":
            kind, job_id = "savepoint", None
            job = short.get(directory.name.split("-")[1])
            job_id = next((j["job_id"] for j in jobs if j["name"] == job), None)
        else:
            continue
        entry: dict[str, Any] = {
            "path": str(directory.relative_to(root)),
            "kind": kind,
            "job": job,
            "job_id": job_id,
        }
        if (directory / "_metadata").is_file():
            entry["state"] = "completed"
            entry.update(flink_truth(root, directory))
            if kind == "savepoint":
                entry["format"] = _savepoint_format(jobs, entry["path"])
        else:
            entry["state"] = "in-flight"
            entry["checkpoint_id"] = int(directory.name[4:])
            entry["files_present"] = sorted(
                str(p.relative_to(root)) for p in directory.rglob("*") if p.is_file()
            )
        entries.append(entry)
    referenced = {f["path"] for e in entries for f in e.get("files", ())}
    metadata = {f"{e['path']}/_metadata" for e in entries if e["state"] == "completed"}
    every = sorted(p for p in root.rglob("*") if p.is_file())
    orphans = [
        {"path": str(p.relative_to(root)), "size": p.stat().st_size}
        for p in every
        if str(p.relative_to(root)) not in referenced | metadata
    ]
    missing = sorted(p for p in referenced if not (root / p).is_file())
    return {
        "format": MANIFEST_FORMAT,
        "tree": tree.name,
        "description": tree.description,
        "flink_version": FLINK_VERSION,
        "java": _java_version(),
        "root": root.as_uri(),
        "regenerate": f"python scripts/flink_trees.py --tree {tree.name}",
        "seconds": round(seconds, 1),
        "jobs": jobs,
        "checkpoints": entries,
        "orphans": orphans,
        "missing": missing,
        "file_count": len(every),
        "total_bytes": sum(p.stat().st_size for p in every),
    }


def _savepoint_format(jobs: list[dict[str, Any]], path: str) -> str | None:
    for job in jobs:
        for event in job["events"]:
            if event["event"] == "savepoint" and event["path"].rstrip("/").endswith(path):
                return str(event["format"])
    return None


def _java_version() -> str:
    done = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    return (done.stderr.splitlines() or ["?"])[0]


# --- packing ------------------------------------------------------------------------------------


def pack(tree: Tree, document: dict[str, Any], out: Path, scratch: Path) -> Path:
    """``out/flink-2.3.0-<tree>.tar.gz``: MANIFEST.json, then the root's entries, sorted."""
    root = ROOT / tree.name
    manifest_file = scratch / f"{tree.name}-MANIFEST.json"
    manifest_file.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n")

    def owner(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    archive = out / f"flink-{document['flink_version']}-{tree.name}.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=9) as tar:
        tar.add(manifest_file, arcname="MANIFEST.json", filter=owner)
        for child in sorted(root.iterdir()):
            tar.add(child, arcname=child.name, filter=owner)
    return archive


def main(argv: list[str] | None = None) -> int:
    known = trees()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", choices=sorted(known), help="default: all")
    parser.add_argument("--out", type=Path, default=OUT, help="where the archives go")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="flink-trees-"))
    try:
        classpath = compile_job(scratch)
        for name in args.tree or sorted(known):
            tree = known[name]
            started = time.monotonic()
            jobs = run_tree(tree, classpath, scratch)
            document = manifest(tree, jobs, time.monotonic() - started)
            archive = pack(tree, document, args.out, scratch)
            print(
                f"{archive.name}: {archive.stat().st_size // 1024} KiB, "
                f"{document['file_count']} files, {len(document['checkpoints'])} directories, "
                f"{len(document['orphans'])} orphans, {document['seconds']} s",
                flush=True,
            )
    finally:
        if args.keep:
            print(f"scratch kept in {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
