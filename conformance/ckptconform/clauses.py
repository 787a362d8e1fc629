"""The normative clause catalog of the conformance suite.

Every test of the suite names the clauses it checks (``@pytest.mark.clause("INL-1")``); the
plugin reads this catalog to validate those ids, to skip clauses whose capability a target does
not claim, and to print the clause report. Ids are stable once published: a clause may be
reworded, never renumbered or reused.

Shape. A clause is written with ``_c(id, level, capabilities, title, text, conditions=...,
rationale=..., spec=...)``. ``text`` is the requirement a storage author can hold in their head:
one or two sentences in contract terms, at most 400 characters, citing no source.
``conditions`` are the conditions its tests exercise (sizes, faults, spellings, server
behaviours, timeouts, backends), one short phrase each, at least one. ``rationale`` says why,
and whether Flink behaves the same ("beyond Flink: ..."), with the fact ids it rests on.
``tests/meta/test_clause_text.py`` checks the shape, and that every term a test's docstring
claims occurs in the title, text, conditions or rationale of its clauses.

Sources. Each clause says which source it follows: the seed documents (Flink's javadoc and
PyFlink's pages, ``seed 000`` .. ``seed 004``), Flink's code and tests (fact ids such as ``S7``
or ``T-BASE1``, each defined in ``docs/flink-facts.md``), or a decision of this
project (``decision``) where Flink has no rule or a known bug. A clause asserts only behaviour
visible through ``ckptstore.api`` and on the backend itself (raw listings, request counts),
never an implementation's classes, temporary file names or one file system's quirks.

Levels. A MUST clause fails the run; a SHOULD clause is reported as a warning unless the run is
strict. A MUST clause depends on an optional capability only when it is about that capability.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from ckptconform.clause_versions import INTRODUCED, TIGHTENED

__all__ = [
    "CAPABILITIES",
    "CLAUSES",
    "GROUPS",
    "GROUP_NOTES",
    "OPTIONS",
    "RESERVED_GROUPS",
    "Clause",
    "Option",
    "clauses_of",
    "options_of_capability",
]


@dataclass(frozen=True, slots=True)
class Clause:
    """One normative statement: what an implementation must (or should) do.

    ``text`` is the requirement, in contract terms, short enough to hold in one's head;
    ``conditions`` are the conditions its tests exercise (sizes, faults, spellings, server
    behaviours, timeouts, backends), one short phrase each; ``rationale`` says why, and
    whether Flink behaves the same ("beyond Flink: ..."), or is empty; ``spec`` names the
    sources. ``since`` is the suite version that introduced it, ``tightened`` the versions
    that tightened its requirement (``ckptconform.clause_versions``).
    """

    id: str
    group: str
    level: Literal["MUST", "SHOULD"]
    capabilities: tuple[str, ...]
    title: str
    text: str
    conditions: tuple[str, ...]
    rationale: str
    spec: tuple[str, ...]
    since: str = ""
    tightened: tuple[str, ...] = ()


#: Optional features a target may claim; clauses that need one are skipped when it is not claimed.
CAPABILITIES: dict[str, str] = {
    "file-layout": "Flink's directory layout: <base>/<job id>/{chk-<n>,shared,taskowned}, "
    "_metadata, savepoint-<job[0:6]>-<random> directories.",
    "inline-state": "Streams honour a configurable inline threshold: state up to the threshold "
    "travels inside the handle, larger state goes to a file on the backend.",
    "savepoints": "initialize_location_for_savepoint writes savepoints to a target or default "
    "savepoint directory.",
    "relocatable-savepoints": "A savepoint directory moved as a whole still restores "
    "(relative handles, rebased by CompletedCheckpointStorageLocation.resolve_handle).",
    "task-owned-state": "Task-owned state streams and the task-owned state toolset.",
    "fast-duplicate": "Toolsets and stream factories duplicate file state server-side "
    "(copy or link, no re-upload).",
    "entropy-injection": "An entropy key in the checkpoint path is replaced by random "
    "characters in data file paths and removed from metadata paths and pointers.",
    "memory-limit": "A maximum state size (JobManagerCheckpointStorage's max_state_size).",
    "retry-budget": "The storage takes a retry budget as options: retry_attempts (requests "
    "per operation, >= 1) and retry_seconds (seconds per public call, all of its requests), "
    "and gives up within them.",
    "flat-layout": "make_storage takes create_subdir=False (Flink's "
    "execution.checkpointing.create-subdir): a job's chk-<n>, shared/ and taskowned/ then lie "
    "directly in the checkpoint directory, with no <job id> directory.",
    "redacts-secrets": "repr() and str() of storages, accesses, locations, streams, handles "
    "and completed locations, the messages of the errors they raise and the implementation's "
    "own log records never show the secrets of the storage's configuration (passwords in "
    "URLs, secret keys, session tokens).",
    "in-memory-checkpoints": "make_storage takes checkpoint_dir=None: completed checkpoints are "
    "then kept in memory, with the pointer '<checkpoint-not-externally-addressable>' (Flink's "
    "JobManagerCheckpointStorage without a checkpoint directory, MEM3).",
}


@dataclass(frozen=True, slots=True)
class Option:
    """One key of the ``options`` mapping that ``make_storage`` receives from the suite.

    ``type`` and ``values`` are what the suite passes (and what a target must accept);
    ``capability`` is the capability configured through the key: a target that claims it
    accepts the key (a target that declares ``options`` must list it). ``passed`` completes
    "The suite passes it ..."; a test that passes it whatever the target claims says so with
    ``@pytest.mark.options(key)`` (CONFORMANCE.md lists those tests).
    """

    key: str
    type: str
    values: str
    meaning: str
    capability: str | None
    passed: str


#: Every key the suite puts into ``make_storage(options=...)``, in the order CONFORMANCE.md lists
#: them. A target may declare the keys it supports (its optional ``options`` attribute); the suite
#: then passes only those, and skips a test that needs another with the reason
#: "option X not supported by <target>".
OPTIONS: dict[str, Option] = {
    option.key: option
    for option in (
        Option(
            "storage_options",
            "Mapping[str, Any]",
            "fsspec-style connection settings; s3fs's keys on S3 legs: endpoint_url, key, "
            "secret, token, client_kwargs (region_name, aws_session_token), "
            "default_block_size (5 MiB in STR-6, STR-14 and BAD-10), in STR-14 "
            "s3_additional_kwargs ({'ChecksumAlgorithm': 'SHA256'}), and in BAD-8 "
            "config_kwargs (proxies) and anon (unsigned requests); fsspec's sftp "
            "keys on the sftp leg: host, port, username, password and paramiko's "
            "disabled_algorithms (a mapping of a tuple and a list); {} on local and memory",
            "How to reach the backend under test: the endpoint and credentials of the S3 "
            "or SFTP server the suite runs or was given. A storage reaches the store with these "
            "settings (whatever library it uses) and holds them as configuration (SER-5).",
            None,
            "on every leg, to every test (a target that declares 'options' without it gets "
            "none, and legs whose backend has connection settings, moto, minio, s3rver, s3 "
            "and sftp, are skipped for it); BAD-8's and SPK-4 to SPK-6's tests pass "
            "variants: other credentials, another route to the same server, secrets in the "
            "endpoint URL.",
        ),
        Option(
            "inline_threshold",
            "int",
            "0 to 1048576 bytes (1 MiB, MAX_FILE_STATE_THRESHOLD); INL-7 passes values above "
            "1048576 and below -1 and expects ValueError",
            "State of at most this many bytes travels inside the handle; larger state goes to a "
            "file on the backend (Flink's state.storage.fs.memory-threshold). When the key is "
            "absent the storage uses its default (INL-8: 20480 bytes).",
            "inline-state",
            "in the tests of the inline-state clauses, and in other tests whenever the target "
            "claims inline-state (0 puts state into files).",
        ),
        Option(
            "write_buffer_size",
            "int",
            ">= 1 bytes (the suite passes 1, 31, 64 and 4096); INL-9 passes -2 and -4096 and "
            "expects ValueError",
            "The size of a stream's write buffer (Flink's state.storage.fs.write-buffer-size). "
            "A storage without a write buffer accepts and ignores it; the clauses check the "
            "inline threshold and tell() across buffer boundaries, and STR-11 that bytes beyond "
            "the buffer reach the file as they are written.",
            "inline-state",
            "with inline_threshold, in INL-1/INL-3's test (some examples), STR-11's and INL-9's "
            "tests and, when the target claims inline-state, in STR-4's test.",
        ),
        Option(
            "entropy_key",
            "str",
            "a non-empty string that occurs in the path of checkpoint_dir, as a segment or "
            "inside one (the suite passes '_entropy_' both ways, and 'entkey' in a bucket whose "
            "name holds it too)",
            "The entropy marker of the checkpoint path (Flink's s3.entropy.key): replaced by "
            "random characters in data file paths, removed from the _metadata path and the "
            "external pointer.",
            "entropy-injection",
            "in LAY-8's test, with entropy_length; LAY-9 passes keys with characters Flink "
            "forbids and an empty key and expects ValueError.",
        ),
        Option(
            "entropy_length",
            "int",
            ">= 1 characters (the suite passes 1 to 4); LAY-9 passes 0, -1 and non-integers "
            "and expects an error",
            "How many random alphanumeric characters replace the entropy key in data file "
            "paths (Flink's s3.entropy.length).",
            "entropy-injection",
            "in LAY-8's and LAY-9's tests, with entropy_key.",
        ),
        Option(
            "create_subdir",
            "bool",
            "True or False (the suite passes both)",
            "Whether a job's directories lie in <checkpoint_dir>/<job id>/ (True, the default) "
            "or directly in <checkpoint_dir> (False; Flink's "
            "execution.checkpointing.create-subdir, whose documentation warns that only one "
            "job may then use the directory).",
            "flat-layout",
            "in LAY-10's test and in LAY-8's with the entropy key alone below a bucket.",
        ),
        Option(
            "max_state_size",
            "int",
            "> 0 bytes (the suite passes 1 to 1000); MEM-4 passes 0 and negative values and "
            "expects ValueError",
            "The largest state one stream may hold (JobManagerCheckpointStorage's "
            "max_state_size); more raises OSError.",
            "memory-limit",
            "in the tests of the MEM clauses.",
        ),
        Option(
            "retry_attempts",
            "int",
            "an integer >= 1 (not a bool): requests per operation (the suite passes 1, 2 and 3); "
            "BAD-9 passes 0, -1, True, 2.5 and '3' and expects an error",
            "The retry budget's attempts: how many requests one operation sends at most; a "
            "retryable failure (a 5xx answer) is retried until that many were sent, then the "
            "operation gives up with an OSError.",
            "retry-budget",
            "in REQ-6's test (with retry_seconds, and alone), in BAD-8's test when the target "
            "claims retry-budget (refused connections end quickly), alone in BAD-9's test of "
            "invalid budgets and with retry_seconds in its test of a valid one.",
        ),
        Option(
            "retry_seconds",
            "float",
            "a finite number > 0 (int or float, not a bool): seconds per public call (the "
            "suite passes 4.0, 5, 6.0, 9.5 and 30); BAD-9 passes 0, -1, NaN, infinity, True "
            "and '5' and expects an error",
            "The retry budget's time: how long one public call may take, all of its requests, "
            "retries and a server that does not answer included, before it gives up with an "
            "OSError.",
            "retry-budget",
            "in REQ-6's test (with retry_attempts, and alone), alone in REQ-13's, in BAD-8's "
            "test when the target claims retry-budget, alone in BAD-9's test of invalid "
            "budgets and with retry_attempts in its test of a valid one.",
        ),
        Option(
            "allow_unconditional_metadata",
            "bool",
            "True or False (the suite passes both)",
            "Whether the storage may finalize checkpoints where the object store's server "
            "ignores conditional writes (If-None-Match), so that _metadata cannot be created "
            "exclusively, accepting that racing finalizations could replace each other's; "
            "without it such a finalization raises OSError naming conditional writes (MD-13).",
            None,
            "True to every test on a leg whose server ignores conditional writes (s3rver) and "
            "through a route whose ledger removes If-None-Match (MD-3's, REQ-1's, BAD-8's and "
            "MD-13's tests), False in MD-13's test of the refusal; only to targets that declare "
            "it or declare no options.",
        ),
    )
}


def options_of_capability(capability: str) -> tuple[str, ...]:
    """The option keys a capability is configured through (a claiming target accepts them)."""
    return tuple(key for key, option in OPTIONS.items() if option.capability == capability)


def _check_options() -> None:
    for key, option in OPTIONS.items():
        if option.capability is not None and option.capability not in CAPABILITIES:
            raise ValueError(f"option {key}: unknown capability {option.capability}")


_check_options()


#: Clause groups in report order, with a one-line description.
GROUPS: dict[str, str] = {
    "SER": "serializability",
    "THR": "thread safety",
    "STR": "stream semantics",
    "INL": "inline threshold",
    "LAY": "path layout",
    "PTR": "pointer resolution",
    "NOX": "no directory-existence calls",
    "TOW": "task-owned state and its cleanup",
    "SAV": "savepoints",
    "MD": "metadata and finalization",
    "DIS": "disposal",
    "MEM": "JobManager storage limits",
    "BAD": "bad input, hostile pointers and secrets",
    "SPK": "distributed execution on Spark",
    "REQ": "request budgets",
    "FLK": "Flink reads it",
}

#: What a reader needs to know about a group before its clauses (CONFORMANCE.md).
GROUP_NOTES: dict[str, str] = {
    "SPK": "These clauses run on the Spark leg (`ckptconform.spark`; `spark` in `--backend`, "
    "as by default; `--spark-master`, default "
    "`local-cluster[2,1,1024]`: two executor JVMs with their own Python workers) on every "
    "backend whose data other processes see (`local`, `moto`, `minio`, `s3`; not `memory`). "
    "The driver plays the coordinator, each Spark task an operator subtask "
    "(`ckptconform.workload`). Every task runs in a fresh Python worker "
    "(`spark.python.worker.reuse=false`), so it has never seen a storage unless it unpickles "
    "one. The rule for handles read elsewhere, which SPK-4 to SPK-6 check: a handle read in "
    "any process uses the configuration of the storage unpickled in that process for its "
    "scheme and bucket, whatever its exact options; else the scheme's process-wide "
    "configuration (fsspec's `FSSPEC_<SCHEME>_<OPTION>` variables, AWS's own variables); never "
    "a silent fallback to another endpoint; an endpoint that cannot be reached fails fast with "
    "an `OSError` that names it. Without pyspark or Java 17 the leg is skipped with that "
    "reason; `--require-legs=spark` turns the skip into an error.",
    "REQ": "These clauses count requests at the server (the request ledger of `moto`, or the "
    "counting proxy in front of `s3rver`, `minio` or `s3`) while the workload of "
    "`ckptconform.workload` runs with tasks on threads of the suite's process, and inject the "
    "ledger's faults: S3-style errors with S3's own bodies, connections dropped before or "
    "after the server carried a request out, token buckets per key prefix answering 503 "
    "SlowDown, a server that hangs, DeleteObjects answered with an error per key, and "
    "listings answered a few entries per page from a snapshot (no signed request is changed, "
    "so all of these work behind the counting proxy). They run on object stores with a "
    "ledger. `ckptconform budget` runs the same "
    "workload at scale (on Spark where it can) against budgets and a baseline.",
    "FLK": "These clauses hold what a storage wrote to Apache Flink 2.3.0's own code: its "
    "`Checkpoints.loadCheckpointMetadata` runs in a JVM (the Flink leg, "
    "`ckptconform.flink`: Java 11 or newer, py4j and Flink's jars from the "
    "`apache-flink-libraries` wheel, cached) on a `_metadata` in Flink's format that the "
    "suite's job writes, each state as Flink's handle of the storage's handle. Where Flink "
    "cannot run the leg is skipped with that reason; `--require-legs=flink` turns the skip "
    "into an error and fetches the jars.",
}

#: Groups that exist but have no clauses yet (later issues add them).
RESERVED_GROUPS: tuple[str, ...] = ()


def _c(
    cid: str,
    level: Literal["MUST", "SHOULD"],
    capabilities: tuple[str, ...],
    title: str,
    text: str,
    *,
    conditions: tuple[str, ...],
    rationale: str = "",
    spec: tuple[str, ...],
) -> Clause:
    """One clause of the catalog (its group is the id's prefix)."""
    group = cid.split("-", 1)[0]
    return Clause(cid, group, level, capabilities, title, text, conditions, rationale, spec)


# fmt: off
_CATALOG: list[Clause] = [
    # ------------------------------------------------------------------ SER
    _c("SER-1", "MUST", (), "storage survives pickle and cloudpickle",
       "A CheckpointStorage survives pickle and cloudpickle, and the copy creates accesses, "
       "writes state and resolves the same pointers as the original.",
       conditions=(
           "a fresh storage, and one already used (a checkpoint written, finalized, resolved)",
       ),
       rationale="seed 000: implementations need to be serializable.",
       spec=("seed 000", "seed 003", "CS1")),
    _c("SER-2", "MUST", (), "handles survive pickling",
       "State handles survive pickle and cloudpickle: the copy has the same state_size and "
       "reads the same bytes.",
       conditions=(
           "inline and file-backed handles (10 and 5000 bytes)",
           "exclusive and shared scope",
       ),
       rationale="Flink's handles are Serializable.",
       spec=("H1", "H4", "MD6")),
    _c("SER-3", "MUST", (), "references and completed locations survive pickling",
       "Location references survive pickling with equality and default-ness intact, and "
       "completed checkpoint locations with the same external_pointer and metadata bytes.",
       conditions=(
           "pickle and cloudpickle",
           "the default reference, a checkpoint location's and one encoding a savepoint "
           "directory",
       ),
       spec=("REF1", "MD6")),
    _c("SER-4", "MUST", (), "objects work in a fresh process",
       "A storage, handles, location references and completed locations unpickled in a fresh "
       "Python process work there: handles read the same bytes, the pointer resolves, "
       "resolve_handle gives handles that read the same bytes, and state written there reads "
       "back in the original process.",
       conditions=(
           "handles read while the storage and they are all the process unpickled yet and "
           "the storage made nothing there (an executor restoring state)",
           "the completed location's metadata handle read there",
           "exclusive and task-owned state written there",
           "a savepoint written to a target in another bucket than the storage's "
           "directories, on the same store",
           "pickle and cloudpickle",
       ),
       rationale="seed 000: storages are distributed across parallel processes. "
       "ckptstore.api's rule for handles read elsewhere, first rule: the same store whatever "
       "the bucket, as Flink configures a scheme's file system once for all its buckets.",
       spec=("seed 000", "seed 003")),
    _c("SER-5", "MUST", (), "storage pickle is small",
       "A storage pickles to less than 4 KiB, also after use: it holds configuration only, no "
       "clients, caches or locks.",
       conditions=(
           "fresh and used, with pickle and cloudpickle",
           "the backend's storage_options (endpoint, test credentials) included",
       ),
       rationale="seed 000: storages 'contain only configurations'.",
       spec=("seed 000", "CS1")),
    _c("SER-6", "SHOULD", (), "storage pickle under 1 KiB",
       "A storage pickles to less than 1 KiB and its pickle does not grow with use.",
       conditions=("fresh and used, with pickle and cloudpickle",),
       rationale="decision, following seed 000's 'very lightweight'.",
       spec=("seed 000", "decision")),
    _c("SER-7", "SHOULD", (), "file handle pickle under 1 KiB",
       "A file-backed state handle pickles to less than 1 KiB: a path and a size, never a file "
       "system instance.",
       conditions=("10000 bytes of state with inline threshold 0, exclusive and shared scope",),
       rationale="Flink's FileStateHandle holds a path and a size.",
       spec=("H1", "decision")),
    _c("SER-8", "MUST", (), "each storage keeps its own route to a shared bucket",
       "When two storages in one process reach the same bucket by different routes, every "
       "request about what one of them made (its handles and completed checkpoints, as "
       "written and as resolved from its pointer, and all it makes later) goes through its "
       "own route, also after the other storage was made.",
       conditions=(
           "object stores; routes with different endpoint URLs",
           "made before the other storage: a checkpoint's location and its stream factory "
           "(writing, duplicating where fast-duplicate is claimed, finalizing)",
           "made before: another checkpoint's location (dispose_on_failure), a savepoint "
           "location, a second access (its setup), the completed locations (reading their "
           "metadata, disposal)",
           "made after: initializing a checkpoint's location; writing exclusive, shared and "
           "task-owned state; duplicating state into task-owned state with the toolset "
           "(fast-duplicate)",
           "made after: a savepoint at the default savepoint directory (savepoints); "
           "dispose_on_failure",
           "handles and completed location read in a fresh process that unpickled both "
           "storages, the other's last",
           "routes differing by region only: on S3, where the server accepts any "
           "credentials, storage_options naming no endpoint (the S3 client takes "
           "AWS_ENDPOINT_URL_S3) and client_kwargs['region_name'] us-east-1 or eu-west-1",
           "by region: every request signed for the region of the storage that wrote it: "
           "the first one's checkpoint (state and metadata written, finalized), the second "
           "one's made after it",
           "by region: reading the first one's handles and completed checkpoint as written "
           "(the first thing it does after the second was made), then as resolved from its "
           "pointer through it, then the second's likewise; disposing of each resolved "
           "checkpoint",
       ),
       rationale="decision: ckptstore.api's rule for handles read elsewhere, first rule; a "
       "process may serve two jobs that reach one bucket by different routes, and the "
       "storage made last must not redirect the other's requests.",
       spec=("decision",)),
    # ------------------------------------------------------------------ THR
    _c("THR-1", "MUST", (), "concurrent streams keep their own bytes",
       "Threads creating and writing streams at once on one storage, one access and one "
       "factory each get a handle that reads back exactly their own bytes, and no two streams "
       "share a file.",
       conditions=(
           "also factories resolved meanwhile and task-owned streams of the access",
           "where file-layout is claimed: the job directory then holds exactly one file per "
           "file-backed handle",
           "1 to 4 streams per thread of about 1, 300, 5000 or 40000 bytes (hypothesis)",
           "all threads finish within 120 seconds",
       ),
       rationale="seed 000: 'Multiple threads may be creating streams concurrently'.",
       spec=("seed 000", "seed 003", "S11")),
    _c("THR-2", "MUST", (), "concurrent coordinator and worker calls",
       "create_checkpoint_storage, initialize_location_for_checkpoint, "
       "resolve_checkpoint_storage_location, finalization and resolve_checkpoint called from "
       "many threads at once on one storage behave as if called one at a time.",
       conditions=(
           "distinct checkpoint ids per thread",
           "all threads finish within 120 seconds",
       ),
       rationale="seed 000: storages are thread-safe.",
       spec=("seed 000",)),
    _c("THR-3", "MUST", (), "close from another thread",
       "close() called from another thread while a stream is being written returns, leaves "
       "the stream closed (later writes raise OSError or ValueError) and leaves no file of "
       "that stream.",
       conditions=(
           "exclusive and shared scope",
           "writes of 4096 bytes running while close() is called",
       ),
       rationale="As Flink's file streams: FLINK-28984, a close racing with file creation "
       "still deletes the file. Flink 2.3.0's JobManager storage takes writes after close, a "
       "Flink bug.",
       spec=("S13", "S16", "T-SOS12", "P5")),
    _c("THR-4", "MUST", (), "a forked process uses the storage",
       "A process forked while its parent's threads write and read state can use the storage, "
       "a pickled copy of it and the parent's handles.",
       conditions=(
           "threads of the parent writing, reading, resolving and creating accesses at the fork",
           "6 children, each creating an access, writing a stream and reading handles back",
           "a child not finished within 60 seconds fails the clause",
       ),
       rationale="decision: PySpark's daemon and multiprocessing's fork start method fork "
       "workers so; Flink's JVM never forks.",
       spec=("decision",)),
    # ------------------------------------------------------------------ STR
    _c("STR-1", "MUST", (), "state round-trips whatever the chunking",
       "Bytes written to a state stream in any chunking read back identically through the "
       "handle from close_and_get_handle(), any number of times, each read starting at the "
       "first byte; its state_size is their number or -1 (unknown).",
       conditions=(
           "exclusive and shared scope",
           "1 to 70000 bytes in chunkings drawn by hypothesis",
           "inline threshold unset, 0, 100 or 20480 where inline-state is claimed",
       ),
       rationale="seed 000: raw bytes storage; as Flink, T-SOS5.",
       spec=("seed 000", "S12", "T-SOS5")),
    _c("STR-2", "SHOULD", (), "state_size is exact",
       "A handle's state_size equals the number of bytes written.",
       conditions=(
           "1, 100, 101 and 70000 bytes in writes of 4096 bytes",
           "exclusive and shared scope; inline threshold unset, 0 or 100",
       ),
       rationale="Flink records the file position; -1 only when that fails.",
       spec=("S12", "H1")),
    _c("STR-3", "MUST", (), "empty stream gives None",
       "close_and_get_handle() on a stream with nothing written, or only empty writes, "
       "returns None and leaves no file.",
       conditions=(
           "no write, one empty write, two empty writes",
           "exclusive and shared scope",
       ),
       rationale="As Flink's file streams (S12a, FLINK-5218 made empty writes count as "
       "nothing). Flink 2.3.0's JobManager storage deviates, a Flink bug: its "
       "MemoryCheckpointOutputStream counts an empty write and returns a 0-byte handle (one "
       "interface, two answers).",
       spec=("S12", "T-SOS2", "MEM4")),
    _c("STR-4", "MUST", (), "tell counts every byte",
       "tell() equals the number of bytes written so far, and write() returns the number of "
       "bytes it was given, 0 for an empty write.",
       conditions=(
           "across chunk and buffer boundaries (inline threshold 17, write_buffer_size 31 "
           "where inline-state is claimed)",
           "0 to 5000 bytes in chunkings drawn by hypothesis, then an empty write",
       ),
       rationale="Flink getPos, T-SOS6; Python's io: write returns the count.",
       spec=("S10", "T-SOS6")),
    _c("STR-5", "MUST", (), "use after close fails",
       "`closed` is False while a stream is open. After close() or close_and_get_handle(), "
       "`closed` is true and write() and close_and_get_handle() raise OSError or ValueError; "
       "an empty write may return 0 instead, as a write of nothing changes no state.",
       conditions=("file-backed and inline state",),
       rationale="Flink S14: IOException; Flink's file stream takes an empty write after "
       "close silently.",
       spec=("S14", "T-SOS9", "T-SOS10")),
    _c("STR-6", "MUST", (), "close discards, idempotently",
       "close() without taking a handle discards the stream: it never raises, can be "
       "repeated and leaves no file of the stream; close() after close_and_get_handle() "
       "keeps the state readable.",
       conditions=(
           "0, 10, 30000 bytes and 6 MiB written",
           "S3 backends with a request ledger: every AbortMultipartUpload answered 500 after "
           "12 MiB were written (a multipart upload is open)",
           "s3fs's default_block_size of 5 MiB in its storage_options",
           "retry_attempts 1 and retry_seconds 5 where retry-budget is claimed",
       ),
       rationale="A failed cleanup is no failure of close(); as Flink, S13, T-CSOS3.",
       spec=("S13", "S14", "T-CSOS3")),
    _c("STR-7", "MUST", (), "context manager",
       "A stream used as a context manager is discarded when the block ends without a handle "
       "(it is closed and leaves no file), exceptions from the block propagate, and a handle "
       "taken inside the block stays valid after it.",
       conditions=(
           "50000 bytes written in a block that ends normally, and in one that raises",
           "a handle of 177 bytes taken inside the block",
       ),
       rationale="Flink T-SOS10: try-with-resources.",
       spec=("T-SOS10", "decision")),
    _c("STR-8", "MUST", (), "written bytes are copied",
       "write() accepts bytes, bytearray and memoryview and stores the bytes as they were at "
       "the call: changing the caller's buffer afterwards does not change the state, and "
       "write() never modifies the caller's buffer.",
       conditions=("10 and 50000 bytes; inline threshold 1024 where inline-state is claimed",),
       rationale="Flink T-SOS5 checks the source array.",
       spec=("S6", "T-SOS5")),
    _c("STR-9", "MUST", (), "flush keeps the stream open",
       "flush() neither ends the stream nor loses bytes: writes after a flush are part of the "
       "same state.",
       conditions=("writes of 5, 3000, 1 and 70000 bytes, each followed by flush()",),
       spec=("S9",)),
    _c("STR-10", "MUST", (), "as_bytes_if_in_memory",
       "as_bytes_if_in_memory() of a handle returns either None or exactly the state's "
       "bytes, and None for handles that name a file.",
       conditions=("1, 100 and 30000 bytes; inline threshold 1000 where inline-state is "
                   "claimed",),
       rationale="Flink H4.",
       spec=("H4",)),
    _c("STR-12", "MUST", (), "input streams seek",
       "The stream open_input_stream() returns is readable() and seekable(); seek(n) from the "
       "start to any n in [0, state size] returns n, then tell() answers n and read() returns "
       "the state from byte n on; read(k) returns at most k bytes, and tell() answers the "
       "state size once all is read.",
       conditions=(
           "a file-backed handle (3000 bytes) and an inline one (100 bytes, inline threshold "
           "1024 where inline-state is claimed)",
       ),
       rationale="Flink FSDataInputStream.seek/getPos: restores of operator and keyed state "
       "seek to offsets within one state file.",
       spec=("decision", "H1")),
    _c("STR-13", "SHOULD", (), "input streams read into buffers",
       "The stream open_input_stream() returns also offers readinto(buffer), read1(k) and "
       "relative seeks as Python's binary files do (io.BufferedIOBase), with the results and "
       "positions io gives; a negative position from the start is refused and leaves the "
       "position where it was.",
       conditions=(
           "after seek(5), readinto() of a 64-byte buffer returns the number of bytes filled "
           "and advances tell() by it; read1(16) then returns 1 to 16 bytes",
           "seek(2, SEEK_CUR), seek(-4, SEEK_CUR) from position 10 and seek(-7, SEEK_END); "
           "tell() after each; read(None), read(3) and read(-1) from there",
           "seek(-1) raises ValueError or OSError; tell() and the next read(4) show the "
           "position kept",
           "readinto() or read1() as the first call on the stream of a file-backed handle "
           "whose file was discarded raises FileNotFoundError, as read() does (DIS-6)",
       ),
       rationale="decision, beyond Flink, whose FSDataInputStream seeks from the start only: "
       "readers that fill preallocated buffers, such as numpy's and pyarrow's, take any "
       "binary file.",
       spec=("decision",)),
    _c("STR-11", "SHOULD", ("inline-state",), "state beyond the write buffer reaches the file",
       "A stream holds at most its write buffer in memory: once more bytes are written than "
       "its write_buffer_size holds, the bytes beyond the buffer are in its file before "
       "close_and_get_handle(), and flush() sends the buffered bytes to the file once more "
       "than the inline threshold is written.",
       conditions=(
           "file systems whose files show their bytes before they are closed (the local "
           "leg); object stores commit a file whole",
       ),
       rationale="As Flink: S5, S6, S8, S9, the buffer is written to the file whenever it is "
       "full.",
       spec=("S5", "S6", "S8", "S9")),
    _c("STR-14", "MUST", (), "large state round-trips in parts",
       "Large state reads back identically whatever its size and write sizes, and a stream of "
       "it closed without taking a handle leaves no file and no open multipart upload; on S3 it "
       "goes up as a multipart upload in parts no larger than s3fs's default_block_size, of "
       "equal size with fixed_upload_size.",
       conditions=(
           "15 MiB as twelve 1 MiB writes and one 3 MiB write, in either scope, state_size "
           "15 MiB or -1; a second stream of as much closed without a handle",
           "S3 backends: s3fs's default_block_size of 5 MiB in the storage_options",
           "where a ledger counts requests: no PutObject of the state's key, at least three "
           "UploadParts of at most 5 MiB of state each (a multipart upload)",
           "five 3 MiB writes; writes of 5 MiB - 1 bytes, 2 bytes and 3 MiB (writes that "
           "straddle the 5 MiB parts, one with a single byte of room left in the first part)",
           "each straddling case written and committed within 30 seconds, each write of other "
           "bytes, read back byte for byte",
           "the five 3 MiB writes with s3_additional_kwargs {'ChecksumAlgorithm': 'SHA256'} "
           "(every part has a SHA256 checksum, which the completion repeats)",
           "S3 backends with a ledger, fixed_upload_size True: 101 MiB in 1 MiB writes goes "
           "up as parts, in part-number order, all the same size but the last",
           "max_state_size 32 MiB where the target claims memory-limit",
       ),
       rationale="An open multipart upload's parts would cost storage until a lifecycle rule, "
       "if any, removes them; s3fs's default_block_size bounds the memory an upload holds; "
       "stores such as Cloudflare R2 refuse parts of unequal size. As Flink S5, S6: a stream "
       "writes its buffer out whenever it is full, whatever the state's size.",
       spec=("S5", "S6", "S13")),
    # ------------------------------------------------------------------ INL
    _c("INL-1", "MUST", ("inline-state",), "small state stays inline",
       "State of at most `threshold` bytes, written in writes each smaller than the "
       "threshold, is returned inline (as_bytes_if_in_memory gives the bytes) and creates no "
       "file.",
       conditions=("thresholds and sizes around them drawn by hypothesis, exclusive and "
                   "shared scope",),
       rationale="seed 002: 'State up to this size will be stored as part of the metadata'; "
       "Flink S7 is inclusive.",
       spec=("seed 002", "S7", "T-SOS3")),
    _c("INL-2", "SHOULD", ("inline-state",), "inline whatever the chunking",
       "State of at most `threshold` bytes stays inline whatever the write chunking, "
       "including one write of exactly `threshold` bytes.",
       conditions=("one write of exactly the threshold: 1, 100, 4096, 20480",),
       rationale="decision, beyond Flink: Flink 2.x spills in that case, T-FSF1; a threshold "
       "is a maximum, and the chunking must not decide.",
       spec=("decision", "S6", "T-FSF1")),
    _c("INL-3", "MUST", ("inline-state",), "larger state goes to a file",
       "State of more than `threshold` bytes is stored in a file on the backend that holds "
       "exactly those bytes, and its handle is not inline.",
       conditions=("thresholds and sizes around them drawn by hypothesis, exclusive and "
                   "shared scope",),
       rationale="seed 002; as Flink S7: threshold+1 bytes give a file.",
       spec=("seed 002", "S7", "T-SOS4")),
    _c("INL-4", "MUST", ("inline-state",), "threshold 0",
       "With threshold 0 every non-empty state goes to a file, and a stream with nothing "
       "written still gives None, not an empty file.",
       conditions=("1 to 20000 bytes in chunkings drawn by hypothesis",),
       rationale="As Flink: S7, testZeroThreshold; S12a.",
       spec=("S7", "T-SOS5")),
    _c("INL-5", "MUST", ("inline-state",), "flush respects the threshold",
       "flush() while at most `threshold` bytes were written creates no file, and the state "
       "still ends inline.",
       conditions=("thresholds 10 and 1000, the threshold's worth of bytes written",),
       rationale="Flink S9, FLINK-17820: flush used to create a file per subtask.",
       spec=("S9", "T-FSF6", "P9")),
    _c("INL-6", "MUST", ("inline-state",), "the 1 MiB maximum is accepted",
       "A threshold of 1048576 bytes (1 MiB, MAX_FILE_STATE_THRESHOLD) is accepted and 1 MiB "
       "of state stays inline under it.",
       conditions=("exactly 1048576 bytes of state",),
       rationale="As Flink: CS4, CFG4.",
       spec=("CS4", "CFG4", "seed 002")),
    _c("INL-7", "MUST", ("inline-state",), "invalid thresholds are rejected",
       "A threshold above 1048576 or below -1 raises ValueError, at make_storage or at the "
       "latest when the first access or stream is created.",
       conditions=("thresholds 1048577, 2**31, -2, -1000",),
       rationale="As Flink: CS4, S2, IllegalArgumentException.",
       spec=("CS4", "S2")),
    _c("INL-9", "MUST", ("inline-state",), "invalid write buffer sizes are rejected",
       "A write_buffer_size below -1 raises ValueError, at make_storage or at the latest when "
       "the first stream of state is closed; -1 means the default.",
       conditions=("write_buffer_size -2 and -4096",),
       rationale="As Flink: CS4, IllegalArgumentException 'The write buffer size must be not "
       "less than '-1''.",
       spec=("CS4",)),
    _c("INL-8", "SHOULD", ("inline-state",), "default threshold 20 KiB",
       "Without a configured threshold, state up to 20480 bytes stays inline and 20481 bytes "
       "go to a file.",
       conditions=("exactly 20480 and 20481 bytes",),
       rationale="Flink CFG4 default since FLINK-17865; PyFlink's '1KB' docstring is stale.",
       spec=("CFG4", "CS4", "P9")),
    # ------------------------------------------------------------------ LAY
    _c("LAY-1", "MUST", ("file-layout",), "job directory",
       "A job's checkpoint data lies below <checkpoint_dir>/<job id>/, where <job id> is "
       "str(JobID): 32 lowercase hex characters.",
       conditions=(
           "a checkpoint with exclusive, shared and task-owned state, inline threshold 0",
           "the suite's layout checker accepts the trees Apache Flink wrote and rejects junk",
       ),
       rationale="seed 001; as Flink, L1, L2.",
       spec=("seed 001", "L1", "L2")),
    _c("LAY-2", "MUST", ("file-layout",), "chk-<n> directories",
       "Checkpoint n's exclusive state and _metadata lie in <job dir>/chk-<n>, n in decimal "
       "without zero padding.",
       conditions=("every id from 0 to the largest Java long, 2**63-1 (hypothesis)",),
       rationale="seed 001: 'chk-17'; as Flink, L1, L2.",
       spec=("seed 001", "L1", "L2", "S3")),
    _c("LAY-3", "MUST", ("file-layout",), "shared/ directory",
       "Shared-scope state of checkpoints lies in <job dir>/shared/.",
       conditions=("inline threshold 0: every state in a file",),
       rationale="As Flink: L1, S3, T-FSA4.",
       spec=("L1", "S3", "T-FSA4")),
    _c("LAY-4", "MUST", ("file-layout",), "files directly in their directory",
       "State files lie directly in their directory (chk-<n>, shared, taskowned, a savepoint "
       "directory), never in sub-directories.",
       conditions=("exclusive, shared and task-owned state, inline threshold 0",),
       rationale="As Flink: L3.",
       spec=("L3",)),
    _c("LAY-5", "MUST", ("file-layout",), "metadata file and pointer",
       "A checkpoint's metadata is the file _metadata in its directory, and its external "
       "pointer names that directory.",
       conditions=("checkpoint ids from 0 to 2**63-1 (hypothesis)",),
       rationale="seed 001: \"'_metadata'\"; as Flink, PTR1, MD4.",
       spec=("seed 001", "L3", "PTR1", "MD4")),
    _c("LAY-6", "MUST", ("file-layout",), "coordinator creates the directories",
       "On file systems with real directories, initialize_base_locations_for_checkpoint creates "
       "shared/ and taskowned/ and initialize_location_for_checkpoint(n) creates chk-<n>; where "
       "they cannot be created (a file in the way), both raise OSError and leave that file as "
       "it was.",
       conditions=(
           "file systems with directories (not object stores)",
           "the checkpoint directory is an existing file, or lies below one; the file is left "
           "as it was",
       ),
       rationale="Workers never create directories. seed 002; as Flink, ACC5, ACC6, T-FSA5: "
       "'Failed to create directory for shared state', and its file systems' mkdirs raise "
       "for a path below a file.",
       spec=("seed 002", "ACC5", "ACC6", "T-FSA5")),
    _c("LAY-7", "MUST", ("file-layout",), "no leftovers after finalization",
       "After finalization a chk-<n> directory holds exactly _metadata and the files of the "
       "exclusive handles taken from its streams: no temporary or staging files remain.",
       conditions=(
           "inline threshold 0 and 100; a discarded stream and an abandoned metadata stream "
           "beside the kept ones",
           "object stores: the first job on an endpoint (a fresh route to the server) leaves "
           "no file below its checkpoint directory but those of chk-<n>, whatever its setup "
           "wrote there",
       ),
       rationale="decision; Flink commits _metadata with no visible staging file, MD2.",
       spec=("MD2", "decision")),
    _c("LAY-8", "MUST", ("entropy-injection",), "entropy key never reaches the store",
       "With an entropy key in the checkpoint path, no object written carries the key where "
       "it first occurs: data files get entropy_length random alphanumeric characters in its "
       "place, the _metadata path and the external pointer have it removed, and the pointer "
       "resolves, through a fresh storage, to the metadata and state written.",
       conditions=(
           "the key a whole segment (entropy_length 4)",
           "inside a segment, 'ent-<key>-x' (entropy_length 1)",
           "twice, '<key>/cp/<key>' (entropy_length 2): only the first occurrence replaced "
           "or removed, the second stays as written",
           "the only segment below a bucket of its own with create_subdir=False, "
           "'s3://<bucket>/<key>' (entropy_length 4): a segment left empty goes away, the "
           "job's setup and checkpoints work, the pointer is s3://<bucket>/chk-<n>",
           "in the path of a bucket whose name holds the key too, "
           "'s3://ckpt-<key>-<random>/<key>/cp' (entropy_length 3): only the URL's path is "
           "rewritten, the bucket stays as named",
           "a whole segment (entropy_length 4) in a storage without a default savepoint "
           "directory",
           "state of every scope, task-owned state, and where fast-duplicate is claimed the "
           "toolset's duplicates and a stream factory's duplicates into both scopes",
           "where a ledger counts requests: no request names a key that holds it there",
           "with the key: dispose_on_failure of another checkpoint's location returns, and "
           "after dispose_storage_location the pointer raises FileNotFoundError",
       ),
       rationale="As Flink: E2, E3, E4, E7, T-ENT1; Flink's EntropyInjector rewrites the "
       "URI's path only.",
       spec=("E3", "E4", "E7", "L7", "T-ENT1")),
    _c("LAY-9", "MUST", ("entropy-injection",), "invalid entropy options are refused",
       "Invalid entropy options raise ValueError (subclasses accepted) when the storage is "
       "made, or at the latest when the job's access is created or "
       "initialize_base_locations_for_checkpoint() is called; an entropy_length that is no "
       "integer may raise TypeError instead.",
       conditions=(
           "an entropy_key holding a character Flink forbids: ~ # @ * + % { } < > [ ] | \" \\",
           "an empty entropy_key ('')",
           "an entropy_length of 0 or less with a key set",
           "an entropy_length that is no integer: TypeError or ValueError",
       ),
       rationale="As Flink E2: IllegalConfigurationException when the S3 file system is "
       "configured, before any file is written. The empty key goes beyond Flink, which takes "
       "it and then fails to create every data file with an IOException (its "
       "EntropyInjector finds '' at the start of every path, and the path it rewrites no "
       "longer starts with '/'): a key that can never work is refused up front.",
       spec=("E2", "E3", "CFG9")),
    _c("LAY-10", "MUST", ("file-layout", "flat-layout"), "flat layout without a job directory",
       "With create_subdir=False, a checkpoint's chk-<n>/ (its exclusive state and "
       "_metadata), shared/ and taskowned/ lie directly in the checkpoint directory and its "
       "external pointer names <checkpoint_dir>/chk-<n>; with create_subdir=True they lie in "
       "<checkpoint_dir>/<job id>/ as LAY-1 says.",
       conditions=("create_subdir False and True",),
       rationale="As Flink: CFG3, FLINK-33057.",
       spec=("CFG3",)),
    # ------------------------------------------------------------------ PTR
    _c("PTR-1", "MUST", (), "pointers resolve",
       "The external_pointer of a finalized checkpoint resolves, through the storage, its "
       "accesses and a fresh storage instance from the same configuration, to a location "
       "whose metadata handle reads the bytes written, with state_size their number or -1.",
       conditions=(
           "checkpoint ids drawn by hypothesis",
           "where savepoints is claimed: a storage whose checkpoint directory is on the "
           "backend under test and whose default savepoint directory is a local directory "
           "(file://) resolves the pointers of its checkpoints and of its savepoints alike",
       ),
       rationale="seed 001: resolveCheckpoint; Flink's handle carries the file's length; its "
       "resolveCheckpointPointer opens the file system the pointer's scheme names.",
       spec=("seed 001", "CS1", "ACC4", "PTR9")),
    _c("PTR-2", "MUST", (), "pointer spellings",
       "A checkpoint's directory and its metadata file, in each spelling the conditions list, "
       "resolve to the same external pointer and metadata bytes, with state_size their number "
       "or -1.",
       conditions=(
           "the directory, with a trailing '/', with a '/' doubled inside its path, and the "
           "metadata file",
           "on the local file system, a bare path with a trailing '/'",
           "on S3, the directory spelt with s3a:// in place of s3://, through the storage and "
           "a fresh one",
           "pointers into checkpoints Apache Flink 2.3.0 wrote",
       ),
       rationale="As Flink: PTR8, T-BASE1; Flink's Path collapses runs of '/' and drops a "
       "trailing one; Flink's S3 file system for Hadoop, flink-s3-fs-hadoop, serves both "
       "schemes.",
       spec=("PTR6", "PTR7", "PTR8", "T-BASE1")),
    _c("PTR-3", "MUST", (), "stable pointer",
       "Resolving an external pointer gives a location whose external_pointer is the same "
       "string.",
       conditions=(
           "checkpoints, and savepoints on a local directory",
           "a savepoint directly below the root of the memory file system (memory:///)",
       ),
       rationale="As Flink PTR1: the qualified directory.",
       spec=("PTR1", "PTR9")),
    _c("PTR-4", "MUST", (), "pointers resolve anywhere on the file system",
       "A storage resolves pointers written by another storage instance or another job, "
       "including pointers outside its own checkpoint directory, to the same "
       "external_pointer, metadata bytes (state_size their number or -1) and state (read "
       "through resolve_handle); two jobs using the same checkpoint id do not interfere.",
       conditions=(
           "two jobs with the same checkpoint id: their pointers differ",
           "where in-memory-checkpoints is claimed, on the local file system: a storage made "
           "without a checkpoint or a savepoint directory",
           "a storage made with a checkpoint directory and no savepoint directory: its "
           "checkpoints' pointers, through itself and another instance of the same "
           "configuration",
           "where in-memory-checkpoints and savepoints are claimed: a storage made with a "
           "savepoint directory and no checkpoint directory, for its savepoints' pointers",
       ),
       rationale="As Flink: T-BASE3; resolveCheckpointPointer is static.",
       spec=("T-BASE3", "CS1")),
    _c("PTR-5", "MUST", (), "missing arguments",
       "resolve_checkpoint(None) raises TypeError and resolve_checkpoint('') raises "
       "ValueError.",
       conditions=("the storage and an access",),
       rationale="As Flink PTR2: NullPointerException, IllegalArgumentException.",
       spec=("PTR2", "T-BASE2")),
    _c("PTR-6", "MUST", (), "missing checkpoint",
       "A pointer to a path that does not exist raises FileNotFoundError.",
       conditions=("below the checkpoint directory, below a new root, a missing metadata "
                   "file",),
       rationale="As Flink: PTR5.",
       spec=("PTR5", "T-BASE2")),
    _c("PTR-7", "MUST", (), "no metadata, no checkpoint",
       "A checkpoint directory without _metadata does not resolve: FileNotFoundError. A "
       "directory named _metadata is a directory like any other: with a _metadata file "
       "inside it resolves to that file's bytes, with only another file inside it raises "
       "FileNotFoundError.",
       conditions=("a checkpoint in flight, aborted, or whose metadata was deleted",),
       rationale="As Flink: PTR6 (the Flink fixture's chk-13); PTR5, PTR6: the file system's "
       "answer decides, not the name.",
       spec=("PTR5", "PTR6")),
    _c("PTR-8", "MUST", (), "invalid pointers",
       "Garbage strings and unknown or unsupported URL schemes raise OSError, and the "
       "JobManager's '<checkpoint-not-externally-addressable>' pointer raises "
       "FileNotFoundError.",
       conditions=("'this-is_not/a#filepath.at.all', 'nosuchscheme-ckpt://bucket/path/chk-1', "
                   "'nosuchscheme-ckpt:/path/chk-1'",),
       rationale="As Flink: PTR3, PTR4, PTR10.",
       spec=("PTR3", "PTR4", "PTR10", "T-BASE2")),
    _c("PTR-9", "SHOULD", (), "any metadata file name",
       "A pointer naming a file is taken as the metadata file, whatever the file's name.",
       conditions=("a copy of the _metadata file under another name in the checkpoint directory",),
       rationale="As Flink: PTR7.",
       spec=("PTR7",)),
    _c("PTR-10", "MUST", (), "Flink-written checkpoints resolve",
       "Pointers into checkpoint and savepoint directories written by Apache Flink 2.3.0 "
       "resolve in every spelling to their _metadata bytes, with an external_pointer that "
       "names the directory; Flink's in-flight chk-13 does not: FileNotFoundError.",
       conditions=("the directories Flink wrote, uploaded below the test's root",),
       rationale="seed 001.",
       spec=("seed 001", "PTR5", "PTR6", "PTR8")),
    _c("PTR-11", "SHOULD", (), "local path spellings",
       "On the local file system, '/abs/dir', 'file:/abs/dir' and 'file:///abs/dir' name the "
       "same checkpoint.",
       conditions=("the local backend only",),
       rationale="Flink prints pointers as 'file:/...'.",
       spec=("PTR1", "PATH")),
    _c("PTR-12", "MUST", (), "highly available storage",
       "A job's supports_highly_available_storage() is true when the storage's completed "
       "checkpoints are externally addressable (their external_pointer resolves through a "
       "fresh storage) and false when their pointer is "
       "'<checkpoint-not-externally-addressable>'.",
       conditions=("with a checkpoint directory, and without one where in-memory-checkpoints "
                   "is claimed",),
       rationale="As Flink: ACC2, the file-system storage answers true; MEM2, the JobManager "
       "storage answers true exactly when a checkpoint directory is set.",
       spec=("ACC2", "MEM2")),
    _c("PTR-13", "SHOULD", (), "Flink's Path normalisation",
       "A pointer spelt with '.' segments, with '..' segments that climb out of a directory "
       "and back into it, or with a '\\' for a '/', resolves to the same external_pointer "
       "and metadata bytes.",
       conditions=(
           "<dir>/. and a '.' segment before the directory's last segment",
           "<dir>/../<its name>",
           "out of the first directory of its path and back, spelt as the test's root is "
           "(s3://<bucket>/<first>/../<first>/...; memory:///<first>/../<first>/..., a URL "
           "that names no host, whose path starts at its first segment)",
           "a '\\' for the '/' before the directory's last segment",
       ),
       rationale="Flink's Path turns '\\' into '/' and normalises its URI, which resolves '.' "
       "and '..'; a SHOULD because a '\\' is a legal character of a POSIX file name and an "
       "S3 key.",
       spec=("PATH", "PTR8")),
    # ------------------------------------------------------------------ NOX
    _c("NOX-1", "MUST", (), "worker path sends no existence checks",
       "On S3, the worker path sends no HeadObject, HeadBucket or List request.",
       conditions=(
           "the worker path: unpickling the storage, create_checkpoint_storage, "
           "resolve_checkpoint_storage_location, creating, writing, closing and finishing "
           "state and task-owned streams",
           "inline threshold unset and 0",
       ),
       rationale="seed 002: floods of directory existence checks are prohibitive; Flink S1.",
       spec=("seed 002", "S1", "P1")),
    _c("NOX-2", "MUST", (), "resolving a location costs nothing",
       "create_checkpoint_storage and resolve_checkpoint_storage_location create nothing on "
       "the backend and, on S3, send no request at all.",
       conditions=("where file-layout is claimed on a file system with directories: no "
                   "chk-<n> directory either",),
       rationale="As Flink: ACC1, ACC9, T-FSA5.",
       spec=("ACC1", "ACC9", "T-FSA5", "seed 002")),
    _c("NOX-3", "MUST", ("inline-state",), "inline streams send nothing",
       "On S3, a stream whose state stays inline sends no request.",
       conditions=("4096 bytes in writes of 100, 1 byte, and a task-owned stream of 10 bytes",),
       rationale="seed 002: 'no files are written'.",
       spec=("seed 002", "S7")),
    _c("NOX-4", "MUST", ("inline-state",), "one upload per file",
       "On S3, a stream whose state goes to a file costs exactly one PutObject, or one "
       "multipart upload (CreateMultipartUpload, UploadPart..., CompleteMultipartUpload), and "
       "nothing else.",
       conditions=("1, 70000 bytes and 6 MiB with inline threshold 0",),
       rationale="seed 002: writes have much higher quotas than HEAD.",
       spec=("seed 002", "S1", "S11")),
    _c("NOX-5", "MUST", ("inline-state",), "discard without existence checks",
       "On S3, discard_state() of a file handle sends a delete and no HeadObject or List "
       "request when the delete succeeds, and the file is gone.",
       conditions=("exclusive, shared and task-owned handles of 500 bytes",),
       rationale="As Flink: H2, T-FSH3.",
       spec=("H2", "T-FSH2", "T-FSH3", "P1")),
    _c("NOX-6", "MUST", (), "resolving a pointer never lists",
       "On S3, resolve_checkpoint sends no List and no HeadBucket request.",
       conditions=("a completed checkpoint's pointer",),
       rationale="As Flink PTR9: one or two status calls, never a listing.",
       spec=("PTR9",)),
    _c("NOX-7", "SHOULD", (), "no directory requests on object stores",
       "On S3, initialize_base_locations_for_checkpoint sends no directory request "
       "(HeadObject, HeadBucket, List) and initialize_location_for_checkpoint sends no "
       "request at all.",
       conditions=("a once-per-job probe of the server's conditional writes is no directory "
                   "request",),
       rationale="decision, following S1: object stores have no directories.",
       spec=("S1", "ACC5", "ACC6", "decision")),
    _c("NOX-8", "MUST", (), "finalization never lists",
       "On S3, creating, writing and finalizing a metadata stream sends no HeadBucket "
       "request, no List request but of the keys that begin with the metadata file's own "
       "key, and HeadObject only on the metadata file itself.",
       conditions=(
           "metadata of 0, 100 and 70000 bytes",
           "a List of the metadata file's own key is MD-13's claim check, where the server "
           "ignores conditional writes",
       ),
       rationale="As Flink: MD2.",
       spec=("MD2", "S1")),
    _c("NOX-9", "SHOULD", (), "resolving a pointer costs one request",
       "On S3, resolve_checkpoint of a completed checkpoint's pointer sends one request, a "
       "HeadObject or a GetObject of the metadata file.",
       conditions=("the external_pointer, that pointer with a trailing '/', and its metadata "
                   "file",),
       rationale="decision, beyond Flink PTR9's one or two status calls: the storage knows "
       "that _metadata lies in the directory, and on S3 a status call on a directory costs a "
       "HeadObject that finds nothing and a List.",
       spec=("PTR9", "S1", "decision")),
    _c("NOX-10", "SHOULD", ("inline-state",), "a discarded stream that uploaded nothing is free",
       "On S3, a state stream discarded with close() before anything of it had to reach the "
       "store sends no request at all: no DeleteObject of an object never written, no "
       "AbortMultipartUpload of an upload never begun.",
       conditions=(
           "exclusive, shared and task-owned streams, inline threshold 0",
           "100 KiB written: past the write buffer, below S3's 5 MiB minimum part size",
       ),
       rationale="decision, beyond Flink, whose state stream deletes on close() the file it "
       "created (S13): on S3 a DeleteObject per discarded stream, each counted against the "
       "bucket's request rates (seed 002).",
       spec=("S13", "seed 002", "decision")),
    # ------------------------------------------------------------------ TOW
    _c("TOW-1", "MUST", (), "task-owned streams round-trip",
       "create_task_owned_state_stream() returns a state stream with the STR semantics: its "
       "handle reads back the bytes, and an empty stream gives None.",
       conditions=("0, 1, 3000 and 70000 bytes",),
       rationale="seed 004.",
       spec=("seed 004", "ACC10")),
    _c("TOW-2", "MUST", ("file-layout",), "task-owned state lies in taskowned/",
       "Task-owned state files lie directly in <job dir>/taskowned/.",
       conditions=("inline threshold 0",),
       rationale="As Flink: TO2, T-FSA3.",
       spec=("TO2", "T-FSA3", "L1")),
    _c("TOW-3", "MUST", (), "coordinator disposal keeps task-owned state",
       "Task-owned state survives dispose_storage_location of completed checkpoints and "
       "dispose_on_failure of aborted ones.",
       conditions=("task-owned state of 10 and 30000 bytes",),
       rationale="seed 004: 'not attached to the life cycle of a specific checkpoint'; as "
       "Flink, TO3.",
       spec=("seed 004", "TO1", "TO3")),
    _c("TOW-4", "MUST", (), "tasks clean up their own state",
       "discard_state() of a task-owned handle removes its state from the backend.",
       conditions=("30000 bytes of task-owned state",),
       rationale="seed 004: 'the responsibility of the tasks to handle the cleanup'.",
       spec=("seed 004", "TO1", "H2")),
    _c("TOW-5", "MUST", (), "abandoned task-owned streams leave nothing",
       "A task-owned stream closed without taking a handle leaves no file.",
       conditions=("10, 30000 bytes and 6 MiB written",),
       rationale="As Flink: S13.",
       spec=("S13", "seed 004")),
    _c("TOW-6", "MUST", ("inline-state",), "threshold applies to task-owned state",
       "The inline threshold applies to task-owned streams: small state inline, larger state "
       "in a file.",
       conditions=("thresholds 0 and 100; the threshold's worth and one byte more",),
       rationale="As Flink: TO2.",
       spec=("TO2", "ACC10")),
    _c("TOW-7", "MUST", (), "duplication of what cannot be duplicated",
       "Toolsets and stream factories answer can_fast_duplicate() False for inline handles, "
       "and duplicate() of a handle they cannot duplicate raises ValueError or OSError.",
       conditions=("the task-owned toolset and factories of both scopes",),
       rationale="As Flink: T-TS1, TO4, TO5, S17.",
       spec=("seed 004", "TO4", "TO5", "S17", "T-TS1")),
    _c("TOW-8", "MUST", ("fast-duplicate",), "fast duplication",
       "For file handles from another location, can_fast_duplicate() is True and duplicate() "
       "returns, in order, handles of new files in the target location with the same bytes "
       "and sizes; a relative handle's copy is relative, an absolute handle's copy absolute; "
       "the sources stay intact.",
       conditions=(
           "the toolset (task-owned) and a factory (the scope's directory)",
           "handles of 100, 5000 and 70000 bytes",
           "a relative copy has its new file's name as relative_path; an absolute copy none",
           "on the local file system: handles on another device (a tmpfs such as /dev/shm, "
           "where the machine has a writable one), which no hard link reaches",
       ),
       rationale="As Flink: TO4, T-TS2, T-TS4.",
       spec=("TO4", "TO6", "S17", "T-TS2", "T-TS4")),
    _c("TOW-9", "MUST", ("fast-duplicate",), "duplication is server-side",
       "On S3, duplicate() copies server-side: one CopyObject request per handle and nothing "
       "else, no GetObject, no upload of the data, and no HeadObject or List, as the handles "
       "carry their sizes.",
       conditions=("inline threshold 0",),
       rationale="Flink TO6: files are copied instead of re-uploaded; decision, beyond Flink, "
       "which leaves a copy's requests to its file system: a size or existence check per "
       "file doubles the requests of a restore in NO_CLAIM mode, pain point P1.",
       spec=("TO4", "TO6", "decision")),
    _c("TOW-10", "MUST", ("fast-duplicate",), "a failed duplication leaves no copies",
       "A duplicate() that fails raises an OSError and leaves no new file anywhere: the "
       "copies it already made are removed.",
       conditions=(
           "three file handles from another location, the last one's file discarded "
           "(discard_state())",
           "the toolset and a factory of either scope; nothing new below the test's root",
       ),
       rationale="decision: no handle refers to those copies, so nothing would ever delete "
       "them; task-owned state is the task's to clean, seed 004.",
       spec=("seed 004", "TO4", "decision")),
    # ------------------------------------------------------------------ SAV
    _c("SAV-1", "MUST", ("savepoints",), "savepoint target matrix",
       "initialize_location_for_savepoint puts the savepoint in a new directory directly "
       "below the given target, which wins over the default savepoint directory, else below "
       "the default.",
       conditions=(
           "default and target, target only, default only",
           "a target at the root of the file system (memory:/// on the memory backend)",
       ),
       rationale="seed 001; as Flink, ACC7, T-BASE5.",
       spec=("seed 001", "ACC7", "T-BASE5")),
    _c("SAV-2", "MUST", ("savepoints",), "no savepoint location",
       "has_default_savepoint_location() tells whether a default savepoint directory is "
       "configured; with neither a target nor a default, initialize_location_for_savepoint "
       "raises ValueError.",
       conditions=("storages with and without a default savepoint directory; no target given",),
       rationale="As Flink: ACC3, ACC7.",
       spec=("ACC3", "ACC7", "T-BASE5")),
    _c("SAV-3", "MUST", ("savepoints",), "self-contained savepoints",
       "A savepoint's exclusive and shared state and its _metadata all lie in its one "
       "directory, and the savepoint restores from its pointer through a fresh storage.",
       conditions=("state written through the savepoint location, and through a worker's "
                   "factory",),
       rationale="As Flink: ACC8, T-FSA1, T-FSA2; FLINK-5763.",
       spec=("ACC8", "T-FSA1", "T-FSA2", "H6")),
    _c("SAV-4", "MUST", ("savepoints", "file-layout"), "savepoint directory names",
       "A savepoint directory is named savepoint-<first 6 characters of the job id>-<12 "
       "characters of [0-9a-f]>.",
       conditions=("savepoints at the default savepoint directory and at a target",),
       rationale="seed 001: 'savepoint-jobId(0, 6)-randomDigits'; as Flink, L5.",
       spec=("seed 001", "L5")),
    _c("SAV-5", "MUST", ("savepoints",), "distinct savepoints",
       "Savepoints of one job taken one after the other at the same target get distinct "
       "directories and do not overwrite each other.",
       conditions=("four savepoints of one checkpoint id in a row, each restored",),
       rationale="seed 001: entropy 'to avoid directory collisions'.",
       spec=("seed 001", "ACC7")),
    _c("SAV-6", "MUST", ("savepoints",), "workers write into savepoints",
       "resolve_checkpoint_storage_location(id, savepoint_location.location_reference) gives "
       "a worker a factory whose state restores with the savepoint.",
       conditions=("the storage and the location_reference pickled to the worker",),
       rationale="seed 004; as Flink, ACC9, REF4.",
       spec=("seed 004", "ACC9", "REF4")),
    _c("SAV-7", "MUST", ("relocatable-savepoints",), "moved savepoints restore",
       "A savepoint directory moved as a whole (the original deleted) resolves at its new "
       "place, and its exclusive state handles, passed through the new location's "
       "resolve_handle, read the same bytes.",
       conditions=(
           "where entropy-injection is claimed, on object stores (as LAY-8): a savepoint at "
           "the default savepoint directory of a storage whose checkpoint path holds the "
           "entropy key as a whole segment, the savepoint directory not",
       ),
       rationale="As Flink: H6, FLINK-5763; E6: only paths that hold the key get entropy, "
       "and only their exclusive handles are absolute.",
       spec=("H6", "P11", "E6")),
    _c("STR-15", "MUST", (), "a failed stream gives no handle",
       "A state stream whose write or flush raised never produces a handle: "
       "close_and_get_handle() raises OSError and the partial file is removed.",
       conditions=(
           "a write that fails part-way under a file size limit of 1 MiB (as on a full disk)",
           "object stores with a ledger: the server refuses a part (UploadPart answered 403 "
           "AccessDenied), later writes attempted all the same",
       ),
       rationale="decision, beyond Flink: its stream keeps no such state and after a failed "
       "write still commits the file and returns a handle, S6, S12.",
       spec=("decision", "S6", "S12")),
    _c("STR-16", "MUST", (), "reads check the state's size",
       "Reading a file-backed handle whose file is shorter or longer than its state_size "
       "(not -1) raises OSError instead of returning other bytes.",
       conditions=(
           "a file of 100000 bytes cut to 50000, or grown by 100000, behind the storage's "
           "back",
           "read(), read(k), readinto() and after seek() alike",
       ),
       rationale="decision, beyond Flink: its FileStateHandle reads whatever the file holds, "
       "H1.",
       spec=("decision", "H1")),
    _c("SAV-8", "MUST", ("savepoints",), "a file is no savepoint target",
       "On file systems with directories, initialize_location_for_savepoint with a target "
       "that is an existing file, or lies below one, raises OSError and leaves the file as "
       "it was.",
       conditions=("the error at initialization or at the latest when the savepoint's "
                   "metadata is finalized",),
       rationale="As Flink ACC7: mkdirs fails, 'Failed to create savepoint directory'.",
       spec=("ACC7",)),
    # ------------------------------------------------------------------ MD
    _c("MD-1", "MUST", (), "metadata is never half-visible",
       "Before close_and_finalize_checkpoint() the checkpoint does not resolve "
       "(FileNotFoundError) and no file exists at the metadata's final path, also after "
       "flush().",
       conditions=("metadata of 10 and 70000 bytes",),
       rationale="decision following FLINK-17808, MD2; Flink's plain writer made it visible "
       "early, P7.",
       spec=("MD2", "T-MOS1", "P7", "decision")),
    _c("MD-2", "MUST", (), "close without finalize leaves nothing",
       "close() on a metadata stream without finalizing leaves the stream `closed`, no file "
       "of that stream, and a checkpoint that does not resolve: FileNotFoundError.",
       conditions=("close() repeated",),
       rationale="Flink MD5, T-MOS2; Flink 2.3.0 leaves the recoverable writer's staging file "
       "behind, a Flink bug.",
       spec=("MD5", "T-MOS2")),
    _c("MD-3", "MUST", (), "no second metadata",
       "A second metadata stream for an already finalized checkpoint fails with OSError, at "
       "creation or at the latest at finalization, and the first _metadata stays unchanged; "
       "of two racing finalizations of one checkpoint exactly one returns, the other raises "
       "OSError, and _metadata holds the bytes of the one that returned.",
       conditions=(
           "a second stream of the same location, and of a location initialized again",
           "an object store whose server ignores conditional writes: If-None-Match removed by "
           "the request ledger of a second route to the backend (as s3rver, older MinIO and "
           "Ceph ignore it); on backends that accept any credentials, since the header is "
           "signed",
           "there with allow_unconditional_metadata (MD-13)",
           "racing, on object stores with a ledger whose server honours conditional writes: "
           "the first's PutObject of _metadata held "
           "by the server for 2 seconds while the second is sent, through a route the "
           "storage has not used before",
       ),
       rationale="As Flink: MD2, T-BASE4.",
       spec=("MD2", "T-BASE4")),
    _c("MD-4", "MUST", (), "finalization result",
       "close_and_finalize_checkpoint() returns a completed location whose external_pointer "
       "is a non-empty string and whose metadata_handle reads exactly the bytes written, "
       "with state_size their number or -1; tell() counted them, from 0 before the first "
       "write.",
       conditions=("writes of 1; 3, 0 and 4000; 70000 and 1 bytes",),
       rationale="As Flink: MD3, MD4.",
       spec=("MD3", "MD4")),
    _c("MD-5", "MUST", (), "empty metadata",
       "A metadata stream with nothing written still finalizes into a resolvable checkpoint "
       "whose metadata has zero bytes: metadata has no inline threshold.",
       conditions=("read through the completed location and through a fresh storage",),
       rationale="As Flink: MD3, T-CSOS1.",
       spec=("MD3", "T-CSOS1")),
    _c("MD-6", "MUST", (), "after finalization",
       "After close_and_finalize_checkpoint(), `closed` is true, write() and a second "
       "finalization raise OSError or ValueError, and close() is harmless and keeps the "
       "checkpoint.",
       conditions=("close() repeated",),
       rationale="As Flink: MD4, MD5.",
       spec=("MD4", "MD5")),
    _c("MD-7", "MUST", (), "resolve_handle",
       "A completed location's resolve_handle() returns handles that read the same bytes, "
       "and raises ValueError for a relative handle whose relative_path is not one file name "
       "inside the directory: it never reads outside the checkpoint.",
       conditions=(
           "the location's own handles, the job's shared and task-owned handles (a "
           "checkpoint references them too), inline handles, absolute file handles",
           "relative paths '../victim', '..', '.', '', 'a/b', '/etc/passwd', '../../x'",
       ),
       rationale="decision, beyond Flink on purpose: Flink rebases any relative path "
       "unchecked (H5: new Path(exclusiveDir, relativePath)), so a '../' path in a crafted or "
       "damaged _metadata names a file outside the checkpoint, which a restore would read "
       "and a discard would delete.",
       spec=("H5", "H6", "decision")),
    _c("MD-8", "MUST", (), "negative checkpoint ids",
       "initialize_location_for_checkpoint() with a negative id raises ValueError.",
       conditions=("ids -1 and -177",),
       rationale="As Flink: ACC6.",
       spec=("ACC6", "MEM3")),
    _c("MD-9", "SHOULD", (), "a second metadata is a FileExistsError",
       "In MD-3's cases the error is a FileExistsError, Python's OSError subclass for "
       "something that exists already, so that a caller can tell 'this checkpoint was "
       "already finalized' from an I/O failure.",
       conditions=(
           "a second metadata stream of the same location, and of a location initialized "
           "again for the same checkpoint id",
           "on a ledger, the object store refuses the second exclusive create of _metadata "
           "with 412 PreconditionFailed or with 409 ConditionalRequestConflict (AWS's answer "
           "to conditional writes of one key at once); the first metadata stays",
       ),
       rationale="decision, beyond Flink: Flink 2.3.0 raises a plain IOException 'Target "
       "file ... already exists.', MD2.",
       spec=("MD2", "decision")),
    _c("MD-10", "MUST", ("in-memory-checkpoints",), "checkpoints kept in memory",
       "On a storage made without a checkpoint directory, the metadata stream and the "
       "completed location behave as MD-4, MD-6 and MD-7 say for the others; close() without "
       "finalizing leaves the stream `closed`, and write() and "
       "close_and_finalize_checkpoint() then raise OSError or ValueError.",
       conditions=(
           "make_storage with checkpoint_dir=None",
           "tell() counts the bytes from 0 and the metadata_handle reads them back",
           "after finalization: `closed` true, write() and a second finalization raise, "
           "close() keeps the metadata_handle readable",
           "close() without finalizing, also repeated",
           "resolve_handle() keeps the bytes of own, shared, task-owned and inline handles "
           "and raises ValueError for a relative handle whose relative_path is not one file "
           "name",
       ),
       rationale="Flink keeps such checkpoints in memory with the pointer "
       "'<checkpoint-not-externally-addressable>', MEM3.",
       spec=("MEM3", "MD3", "MD4", "MD5", "H6")),
    _c("MD-11", "MUST", (), "overlapping finalizations keep the first",
       "A second metadata stream made before the first finalizes and finalized after it "
       "fails with OSError, at creation or at the latest at finalization, and the first "
       "_metadata stays unchanged; of racing finalizations of one checkpoint exactly one "
       "returns, the others raise OSError, and _metadata holds the returned one's bytes.",
       conditions=(
           "the second stream of the same location, or of one initialized again",
           "12 finalizations racing on any backend but a server that ignores conditional "
           "writes (MD-13): threads started together, round after round, each with its own "
           "location initialized again",
       ),
       rationale="decision, beyond Flink on purpose: Flink 2.3.0 checks for an existing "
       "_metadata only when a stream is made and on local disks commits by an atomic rename, "
       "so both finalizations return and the checkpoint first reported complete is silently "
       "replaced; Flink's coordinator never finalizes one checkpoint twice, but two "
       "coordinators or a tool that share the storage can (MD2, T-BASE4).",
       spec=("MD2", "T-BASE4", "decision")),
    _c("MD-12", "MUST", (), "failed writes leave nothing staged",
       "After close_and_finalize_checkpoint() or a state stream's close_and_get_handle() "
       "fails, or its write fails and close() follows, no temporary, staging or partial file "
       "of it stays on the backend, nor an open multipart upload.",
       conditions=(
           "a file size limit of 1024 bytes (as on a full disk): a finalization, a small "
           "state's close_and_get_handle() and a large state's failed write, then close()",
           "object stores with a ledger, every upload refused with 403 AccessDenied: the "
           "PutObject of _metadata, of a small state (3000 bytes) and the "
           "CompleteMultipartUpload of a state of 12 MiB in parts",
       ),
       rationale="decision; Flink's state stream removes its file, S12; its "
       "RecoverableWriter keeps a failed _metadata's staging file, a bug, MD4.",
       spec=("decision", "S12", "MD4")),
    _c("MD-13", "MUST", (), "no silent loss without conditional writes",
       "Where the object store's server ignores conditional writes, a finalization either "
       "refuses with an OSError naming them and leaves no _metadata or, with "
       "allow_unconditional_metadata, of racing finalizations at most one returns and "
       "_metadata holds its bytes.",
       conditions=(
           "s3rver, and moto through a second route whose ledger removes If-None-Match",
           "without allow_unconditional_metadata: one finalization",
           "with allow_unconditional_metadata: 12 finalizations of one checkpoint racing, the "
           "others raise OSError",
       ),
       rationale="decision; as Flink, which checks, then writes: the later one replaces it "
       "(MD2).",
       spec=("MD2", "decision")),
    # ------------------------------------------------------------------ DIS
    _c("DIS-1", "MUST", (), "aborted checkpoints are removed",
       "dispose_on_failure() of an in-progress location removes its exclusive state from the "
       "backend, and shared-scope state written for it survives.",
       conditions=(
           "where file-layout is claimed: its chk-<n> directory holds no file afterwards",
           "where savepoints is claimed: a savepoint's location (its directory holds no file "
           "afterwards)",
           "on S3: a checkpoint directory at the bucket's top level whose name starts with an "
           "'X' or a space",
       ),
       rationale="As Flink: MD7, ACC12.",
       spec=("MD7", "ACC12")),
    _c("DIS-2", "MUST", (), "completed checkpoints are removed",
       "dispose_storage_location() of a completed location removes the checkpoint's "
       "directory recursively (_metadata, exclusive state, anything else below it), and the "
       "pointer no longer resolves: FileNotFoundError.",
       conditions=(
           "a completed location as finalized, and as resolved by resolve_checkpoint on a "
           "fresh storage",
           "on S3: a checkpoint directory at the bucket's top level whose name starts with an "
           "'X' or a space",
       ),
       rationale="Flink MD6, T-CCL1, FLINK-38909; Flink 2.3.0 still deletes "
       "non-recursively, a Flink bug that leaves chk-<n> directories behind, P4.",
       spec=("MD6", "T-CCL1", "P4")),
    _c("DIS-3", "MUST", (), "disposal is confined",
       "Disposing one checkpoint (dispose_storage_location of a completed one, "
       "dispose_on_failure of an aborted one) never removes shared state, task-owned state "
       "or another checkpoint's data.",
       conditions=("one checkpoint disposed and one aborted, beside a second completed "
                   "checkpoint, shared and task-owned state",),
       rationale="As Flink: MD6, MD7, TO3.",
       spec=("MD6", "MD7", "TO3")),
    _c("DIS-4", "MUST", (), "deleting what is gone is not an error",
       "discard_state() of a handle whose file is already gone, and a second dispose of a "
       "location, do not raise; a disposal whose keys the server reports gone still "
       "succeeds and leaves nothing.",
       conditions=(
           "object stores with a request ledger whose server carries out every DeleteObjects "
           "and then reports each of its keys with an <Error> of code NoSuchKey (as "
           "S3-compatible servers report keys already gone)",
           "there: dispose_on_failure of a location in progress and dispose_storage_location "
           "of a completed checkpoint, each holding 2 exclusive state files, leave no object "
           "in the directories of those files and of the _metadata",
       ),
       rationale="As Flink: H2, FLINK-26450.",
       spec=("H2", "T-FSH4", "P8")),
    _c("DIS-5", "MUST", (), "discard deletes only its own file",
       "discard_state() removes the handle's file only: other files in the same directory "
       "survive, and on file systems with directories the directory survives.",
       conditions=("exclusive, shared and task-owned state",),
       rationale="As Flink: H2, T-FSH2.",
       spec=("H2", "H4", "T-FSH2", "T-SOS10")),
    _c("DIS-6", "MUST", (), "removed state reads as missing",
       "A file-backed handle of exclusive state whose file was removed raises "
       "FileNotFoundError when it is opened with open_input_stream() and read (a lazy reader "
       "may raise at the first read()); an inline handle still reads its bytes.",
       conditions=("the file removed by its discard_state(), or by dispose_on_failure() of "
                   "its location",),
       rationale="As Flink: H1, H4, FileStateHandle.openInputStream on a deleted file raises "
       "FileNotFoundException; a restore must tell lost state from an I/O failure.",
       spec=("H1", "H4", "MD7")),
    _c("DIS-7", "MUST", (), "disposal stays below its own directory, whatever the spelling",
       "Disposal deletes and changes nothing outside its own directory, whatever the "
       "spelling of its path; refusing such a path is an OSError or ValueError.",
       conditions=(
           "a checkpoint directory, savepoint target or pointer holding s3fs's '?versionId=' "
           "(where it cuts a key) or fsspec's glob characters '*', '?', '[' next to another "
           "directory, which survives",
           "local, memory, S3 and SFTP backends",
       ),
       rationale="decision; Flink keeps these characters in the name.",
       spec=("MD6", "MD7", "decision")),
    # ------------------------------------------------------------------ MEM
    _c("MEM-1", "MUST", ("memory-limit",), "state up to the maximum",
       "State of exactly max_state_size bytes is accepted and reads back.",
       conditions=("max_state_size 1, 17 and 1000; exclusive and shared scope",),
       rationale="As Flink MEM5: the check is size > max.",
       spec=("MEM5", "CS3")),
    _c("MEM-2", "MUST", ("memory-limit",), "state above the maximum",
       "State of max_state_size + 1 bytes fails with OSError, at the latest at "
       "close_and_get_handle().",
       conditions=("max_state_size 1, 17 and 1000; exclusive and shared scope",),
       rationale="As Flink: MEM5; P10.",
       spec=("MEM5", "P10")),
    _c("MEM-3", "MUST", ("memory-limit",), "limit applies to task-owned state",
       "The maximum applies to task-owned streams as well.",
       conditions=("max_state_size 100: 100 bytes read back, 101 bytes fail",),
       rationale="As Flink: ACC10, memory variant.",
       spec=("ACC10", "MEM4")),
    _c("MEM-4", "MUST", ("memory-limit",), "invalid maximum",
       "A max_state_size of 0 or less raises ValueError at make_storage or at the latest at "
       "first use.",
       conditions=("max_state_size 0, -1 and -5 MiB",),
       rationale="As Flink CS3: 'maxStateSize must be > 0'.",
       spec=("CS3", "MEM1")),
    _c("MEM-5", "SHOULD", ("memory-limit",), "default maximum 5 MiB",
       "Without a configured maximum, 5 MiB of state is accepted and 5 MiB + 1 byte fails.",
       conditions=("writes of 1 MiB",),
       rationale="Flink's DEFAULT_MAX_STATE_SIZE, PyFlink.",
       spec=("CS3", "CC5")),
    # ------------------------------------------------------------------ BAD
    _c("BAD-1", "MUST", (), "bad arguments raise TypeError or ValueError",
       "Every public method of the contract, called with one bad argument and every other "
       "argument valid, raises TypeError or ValueError (subclasses accepted) and no other "
       "exception: not AttributeError, KeyError, OSError or a client library's.",
       conditions=(
           "the suite's fixed corpus, and a hypothesis sample of such values",
           "job ids that are not JobIDs: None, numbers, bytes, strings that are not 32 hex "
           "digits",
           "pointers and savepoint targets that are not strings, among them an object whose "
           "str() raises",
           "ids that are not ints (None, 'x', '1', 1.0, NaN, True, b'1', Decimal) or lie "
           "outside the Java long range (2**63, -2**63-1)",
           "those ids given to initialize_location_for_checkpoint, "
           "initialize_location_for_savepoint (with and without a target) and "
           "resolve_checkpoint_storage_location; negative ids for "
           "initialize_location_for_checkpoint",
           "location references that are not CheckpointStorageLocationReferences (None "
           "aside, which is BAD-3's)",
           "scopes that are neither CheckpointedStateScope members nor their values; None as "
           "duplicate's scope",
           "handles and handle lists that are not state handles, among them objects with the "
           "handle's methods whose state_size is not an int or whose file_path or "
           "relative_path is not a string (as a damaged _metadata may give)",
           "those given to resolve_handle and to the can_fast_duplicate and duplicate of a "
           "stream factory and of the task-owned toolset (duplicate only where "
           "fast-duplicate is claimed; can_fast_duplicate may answer False instead)",
           "write() data that is not bytes, bytearray or memoryview, on state, task-owned and "
           "metadata streams",
       ),
       rationale="decision: Java's types rule these out in Flink; the contract maps "
       "NullPointerException to TypeError and IllegalArgumentException to ValueError. "
       "Flink's JobManager storage ignores the reference (ACC9). A caller duplicates only "
       "what can_fast_duplicate accepted, and a storage without fast-duplicate refuses "
       "every duplicate before it looks at the arguments (TOW-7), as Flink does (TO5, S17).",
       spec=("decision", "ACC6", "S17", "TO5")),
    _c("BAD-2", "MUST", (), "None is a TypeError, ids out of range a ValueError",
       "None as a job id, pointer, checkpoint or savepoint id, handle, handle list or write() "
       "data raises TypeError, and an id outside the Java long range (-2**63 .. 2**63-1), or "
       "a negative id given to initialize_location_for_checkpoint, raises ValueError "
       "(subclasses accepted).",
       conditions=(
           "BAD-1's corpus",
           "can_fast_duplicate may answer False instead",
       ),
       rationale="As Flink: NullPointerException, IllegalArgumentException, ACC6; ids are "
       "Java longs so that Flink can read what was written.",
       spec=("PTR2", "ACC6", "decision")),
    _c("BAD-3", "SHOULD", (), "stricter argument checks than Flink's",
       "An argument of the wrong type raises TypeError, not only ValueError; a negative id "
       "given to initialize_location_for_savepoint or resolve_checkpoint_storage_location "
       "raises ValueError; None as a scope or a location reference raises TypeError.",
       conditions=(
           "BAD-1's corpus",
           "wrong types: a str, float, bool, bytes or Decimal as an id; bytes, a number, a "
           "list or another object as a job id, pointer, scope, reference, handle or write() "
           "data; a str as a reference, handle or data",
           "strings given as a scope or a job id count as invalid values, not types",
           "None as the scope of create_checkpoint_state_output_stream or "
           "can_fast_duplicate, or as the reference of resolve_checkpoint_storage_location",
       ),
       rationale="Python's convention; the contract also allows ValueError, Flink's "
       "IllegalArgumentException, and the reference raises an error that is both. This "
       "SHOULD goes beyond Flink, which checks ids only in initializeLocationForCheckpoint "
       "(ACC6), ignores the savepoint id (ACC7), takes a null scope as shared (S3), and whose "
       "JobManager storage ignores the reference (ACC9).",
       spec=("ACC6", "ACC7", "ACC9", "S3", "decision")),
    _c("BAD-12", "SHOULD", (), "errors name the bad argument",
       "The message of every error raised for a bad argument names that argument by its "
       "parameter name in ckptstore.api.",
       conditions=(
           "BAD-1's fixed corpus",
           "names: job_id, external_pointer, checkpoint_id, external_location_pointer, "
           "reference, scope, handle, handles, data",
           "a pointer or savepoint target may be called 'pointer' or 'target', a handles list "
           "'handle'",
           "compared without case, spaces and underscores: 'jobId' and 'checkpoint id' count",
       ),
       rationale="decision, beyond Flink: an error for bad input says what was wrong, never "
       "only what broke deep inside; Flink's JobManagerCheckpointStorage raises a "
       "NullPointerException and an IllegalArgumentException without a message for a None "
       "job id and a negative checkpoint id.",
       spec=("decision",)),
    _c("BAD-4", "MUST", (), "hostile pointers and references",
       "Hostile pointers given to resolve_checkpoint and unusable references given to "
       "resolve_checkpoint_storage_location raise TypeError, ValueError or OSError "
       "(FileNotFoundError included), or resolve, and nothing else; a pointer resolves only "
       "where, normalised as Flink's Path does, it names a checkpoint, and then to that "
       "checkpoint, with an external_pointer without '.' or '..' segments.",
       conditions=(
           "the corpus's hostile pointers, given to resolve_checkpoint of the storage and of "
           "an access; references for which resolve_checkpoint_storage_location may return",
           "pointers empty, blank, with NUL, newline and other control characters, lone "
           "surrogates that are not UTF-8, longer than 4096 characters, unknown schemes",
           "texts shaped like credentials: a sig=... parameter, an Authorization header, a "
           "Bearer token, a quoted mapping holding a password, user:password@host",
           "percent-encoded segments such as '%2e%2e' and '%2f', and '.', '..' and empty "
           "segments below the test's root",
           "a hypothesis sample of such segments appended to a checkpoint's pointer",
           "resolves only to the checkpoint (its metadata bytes) whose directory or metadata "
           "file the '.', '..' and empty segments name",
           "does not resolve: a '%2e%2e' segment that would lead to a checkpoint if it were "
           "decoded",
           "does not resolve, for a checkpoint on the local file system: the file URL whose "
           "host spells its path's first directory (file://tmp/x for /tmp/x)",
           "pointers whose '..' segments climb above the test's root need only a typed outcome",
           "object stores with a request ledger: a checkpoint's pointer with '.' or '..' put "
           "before its bucket (s3://./<bucket>/..., s3://../<bucket>/...) refused before any "
           "request reaches the server",
           "references: one byte (shorter than the magic number, which ckptstore.api's "
           "CheckpointStorageLocationReference can be made of), no magic number, not UTF-8, "
           "NUL, '/..', an unknown scheme, 5000 characters",
       ),
       rationale="decision: neither '.' nor '..' is a bucket name, and a request for one "
       "reaches the real bucket once an HTTP layer normalises its path. Flink's Path "
       "normalises '.', '..' and '//' and keeps '%' literal; it refuses 'Found local file "
       "path with authority'; Flink's reference takes any non-empty array, and its "
       "JobManager storage ignores references (PTR1, PTR3, PTR4, ACC9, REF1, REF3).",
       spec=("PTR1", "PTR3", "PTR4", "PTR8", "ACC9", "REF1", "REF3")),
    _c("BAD-5", "MUST", ("savepoints",), "hostile savepoint targets",
       "initialize_location_for_savepoint with a hostile target raises TypeError, ValueError "
       "or OSError and nothing else; a target whose '.' and '..' segments stay below the "
       "test's root is either refused so or holds the savepoint directly below the "
       "normalised target.",
       conditions=(
           "targets empty or blank, containing NUL, longer than 4096 characters, or with an "
           "unknown scheme",
           "the error at initialization or at the latest when the savepoint's metadata is "
           "finalized",
           "a normalised target: an external_pointer without '.' or '..' segments, and no "
           "directory created that the target only passes through",
       ),
       rationale="Flink's Path normalises the target before mkdirs, ACC7. Refusing a blank "
       "target goes beyond Flink on purpose: Flink's Path rejects the empty string but takes "
       "' ' or a tab as a relative path, a whitespace-named directory in the working "
       "directory of the process, where nobody looks for the savepoint (a blank target is an "
       "unset or mis-quoted setting, never a place).",
       spec=("ACC7", "PTR1", "L5")),
    _c("BAD-6", "MUST", (), "bad input changes nothing",
       "Refused calls change nothing: after them the backend holds the same files and bytes "
       "as before, and the same storage, access, open location and stream factory still "
       "write, finalize, resolve, read and dispose.",
       conditions=(
           "BAD-1's and BAD-2's fixed corpus: the calls every storage must refuse",
           "among them, where fast-duplicate is claimed, duplicate() of a list whose first "
           "handle is valid and whose second is not",
           "among them initialize_location_for_savepoint with a bad id and a target below the "
           "test's root",
           "BAD-4's hostile pointers and references",
           "compared: a raw listing of the test's root and of the working directory, with "
           "every file's size and SHA-256",
           "afterwards: exclusive, shared and task-owned state written, finalized, resolved "
           "(also through a fresh storage), every byte read back, disposed",
       ),
       rationale="decision: arguments are checked before anything is written.",
       spec=("decision", "S17")),
    _c("BAD-7", "SHOULD", ("file-layout",), "disposal deletes only checkpoint directories",
       "A location resolved from a pointer that names no chk-<n> or savepoint directory "
       "either does not resolve or, when disposed, deletes and changes nothing outside "
       "chk-<n> and savepoint-<job>-<suffix> directories.",
       conditions=(
           "a directory with a _metadata file but another name, its _metadata or another file "
           "in it, the same reached by '..' from a checkpoint",
           "a file in the job or checkpoint base directory, the job and base directories "
           "themselves, a shared or task-owned state file",
           "disposed with dispose_storage_location; compared in a raw listing of the test's "
           "root with every file's size and SHA-256",
           "where savepoints is claimed: dispose_on_failure of a savepoint located below an "
           "existing directory deletes nothing outside them that existed before",
       ),
       rationale="decision; Flink resolves any file as metadata (PTR7) and since FLINK-38909 "
       "deletes its parent directory recursively (MD6), so Flink does not meet this.",
       spec=("PTR7", "MD6", "decision")),
    _c("BAD-8", "MUST", ("redacts-secrets",), "secrets are never shown",
       "No secret of the storage's configuration shows in repr() or str() of the storage or "
       "any object it makes, in the errors their methods raise (with causes and contexts), "
       "or in the records of the implementation's own loggers; reprs return text and never "
       "raise.",
       conditions=(
           "object-store backends, storage_options holding secrets: an endpoint URL with "
           "user:password@ userinfo, the password "
           "holding an apostrophe (as RFC 3986 allows), on 127.0.0.1 at a port that refuses "
           "connections",
           "config_kwargs' proxies for http and https at another such port with "
           "user:password@ userinfo; a secret key; client_kwargs' aws_session_token",
           "with the same secrets, an endpoint URL on such a port whose query string carries "
           "an X-Amz-Security-Token and a sig parameter (the shape of presigned and SAS URLs, "
           "which botocore refuses by quoting it)",
           "unsigned requests (s3fs's anon) to an endpoint URL whose userinfo password is "
           "four characters holding an apostrophe, which the client's connection error "
           "quotes whole, so that only the configured value finds it",
           "then one whose password is a digit, an apostrophe, the session token and a tail: "
           "blanking the token first would leave the tail (no part of a password that holds "
           "another secret may show)",
           "retry_attempts 1 and retry_seconds 5 where retry-budget is claimed; steps still "
           "running after 20 seconds are abandoned unchecked",
           "objects: the storage, its access, locations, stream factories, streams, handles, "
           "the task-owned toolset and completed locations",
           "loggers named under the top-level package of the target's or the storage's "
           "class, at every level, as formatted",
           "object-store backends that accept any credentials: a storage that reaches the "
           "store with a secret key and session token (state written, finalized, resolved, "
           "read, disposed); elsewhere the backend's own secret",
           "backends with a request ledger that accept any credentials: finalizing a "
           "checkpoint whose _metadata PutObject commits but loses its answer (REQ-4)",
           "there also disposing it while ListMultipartUploads is answered 501 (REQ-11), and "
           "finalizing one through a second route to the server that ignores conditional "
           "writes",
           "there each step succeeds, and every record (at every level; the suite demands "
           "none) gives its text from getMessage() without raising and shows neither secret",
           "every backend, with its own settings (the sftp leg's password, beside an option "
           "holding a mapping of a tuple and a list): reprs, errors and log records are text "
           "and show none of the backend's secrets",
       ),
       rationale="decision; the contract's untrusted-input rules.",
       spec=("decision",)),
    _c("BAD-9", "MUST", ("retry-budget",), "invalid retry budgets are refused, valid ones kept",
       "An invalid retry budget raises ValueError (TypeError or ValueError for a value of the "
       "wrong type) when the storage is made, or at the latest when the job's access is "
       "created and a first stream of state is closed; a valid budget is accepted on every "
       "backend.",
       conditions=(
           "retry_attempts 0 or -1 and retry_seconds 0, -1, NaN or infinity: ValueError",
           "retry_attempts True, 2.5 or '3' and retry_seconds True or '5': TypeError or "
           "ValueError (subclasses accepted)",
           "valid: retry_attempts 2, retry_seconds 30, on every backend, also where the store "
           "is no object store: 3000 bytes of state (in a file where inline-state is claimed) "
           "read back and a checkpoint finalizes",
       ),
       rationale="decision: a budget that allows no request, no time or unbounded time is a "
       "misconfiguration, refused as INL-7 and MEM-4 refuse theirs; the options catalog "
       "gives the ranges.",
       spec=("decision",)),
    _c("BAD-10", "MUST", (), "an unreachable store fails fast, typed and named",
       "When the store cannot be reached, every step that needs it raises an OSError within "
       "15 seconds whose message names the endpoint's host and port; the steps before them "
       "either succeed or fail the same way, and a failed base initialization does not stop "
       "the checkpoint's location from being used.",
       conditions=(
           "backends that reach a server; storage_options that name 127.0.0.1 at a port that "
           "refuses connections: an object store's endpoint_url; an SFTP server's port, which "
           "the checkpoint and savepoint URLs then name too",
           "steps that need the store: closing a stream of 3000 bytes of state (where "
           "inline-state or file-layout is claimed; inline threshold 1024 where inline-state "
           "is), finalizing a checkpoint's _metadata, resolve_checkpoint of a pointer below "
           "the test's root",
           "on object stores with s3fs's default_block_size of 5 MiB in the storage_options: "
           "closing a stream of 12 MiB (a multipart upload begins while it is written)",
           "an object store's endpoint_url at the IPv6 loopback, http://[::1]:<port> with "
           "nothing bound there (the steps fail the same way where the machine has no IPv6 "
           "loopback)",
           "there the message names it as [::1]:<port> wherever it names the port, with the "
           "brackets a URL gives an IPv6 host (a bare '::1:<port>' reads as another address)",
           "an S3 endpoint given only by botocore's AWS_ENDPOINT_URL_S3, "
           "http://127.0.0.1:<port>, storage_options naming no endpoint (neither "
           "endpoint_url nor client_kwargs' endpoint_url; a key and secret of their own): "
           "named 127.0.0.1:<port>",
           "steps before them: make_storage, creating the access, initializing the base "
           "locations and the checkpoint's location, creating streams, writing, close()",
       ),
       rationale="decision; SPK-6 on the coordinator; as Flink's IOException naming the host.",
       spec=("decision",)),
    _c("BAD-11", "SHOULD", (), "an unreachable store is a ConnectionError",
       "An error caused by a connection that could not be made is a ConnectionError, "
       "Python's OSError subclass for it, so that callers can tell an unreachable store from "
       "a missing or unreadable object.",
       conditions=(
           "BAD-10's steps through a refused connection",
           "object stores through an endpoint_url whose host does not resolve, "
           "http://ckptconform.invalid:9000 (RFC 2606 reserves .invalid): every error a "
           "ConnectionError",
           "there the steps that need the store each raise an OSError within 15 seconds "
           "whose message names ckptconform.invalid:9000; the others succeed or fail the same "
           "way, as in BAD-10",
       ),
       rationale="decision; Flink's java.net.ConnectException.",
       spec=("decision",)),
    _c("BAD-13", "SHOULD", (), "server errors name the endpoint",
       "When the server refuses a request, the message of the OSError raised names the server's "
       "host and port; the other steps either succeed or fail the same way.",
       conditions=(
           "backends with a request ledger, the endpoint given as s3fs's endpoint_url or as "
           "its client_kwargs' endpoint_url; the server answers every request 403 "
           "AccessDenied",
           "raise within 15 seconds: closing a stream of 3000 bytes of state (where "
           "inline-state or file-layout is claimed; inline threshold 1024 where inline-state "
           "is), finalizing a checkpoint's _metadata",
           "raise within 15 seconds: reading a file-backed handle written before, "
           "resolve_checkpoint of a checkpoint completed before",
           "succeed or fail the same way: creating the streams, writing, close(), reading an "
           "inline handle, duplicating a file-backed handle written before (where "
           "fast-duplicate is claimed), discarding it",
           "succeed or fail the same way: dispose_on_failure of the checkpoint's location, "
           "dispose_storage_location of the completed checkpoint",
           "every backend that reaches a server (an endpoint_url, or an SFTP server's host and "
           "port): in BAD-15's steps that create directories or files, every OSError but a "
           "FileNotFoundError names it (the path past the server's limits is its refusal)",
       ),
       rationale="decision, as BAD-10 for a refused connection: S3's and SFTP's error texts "
       "name no endpoint, and an operator whose storage reaches several needs to know which "
       "one refused.",
       spec=("decision",)),
    _c("BAD-14", "SHOULD", (), "errno and class agree",
       "Every OSError the storage raises carries an errno that Python's OSError(errno, text) "
       "maps to the error's own built-in class (the first in its MRO); a ConnectionError, "
       "which no errno maps to, carries a connection errno.",
       conditions=(
           "connection errnos: ECONNREFUSED, ECONNRESET, ECONNABORTED, EPIPE, ETIMEDOUT, "
           "EHOSTUNREACH, ENETUNREACH",
           "reading a file-backed handle whose file was discarded: FileNotFoundError with "
           "errno ENOENT, on every backend",
           "every OSError resolve_checkpoint raises for BAD-4's fixed hostile pointers and for "
           "a checkpoint directory that does not exist (the storage's own refusals included)",
           "file systems with directories: a savepoint target that is an existing file or "
           "lies below one (SAV-8's cases); ENOTDIR only on a NotADirectoryError",
           "through an endpoint that refuses connections (BAD-10's steps): every OSError "
           "carries errno ECONNREFUSED",
           "while the server answers every request 403 AccessDenied (BAD-13's steps): no error "
           "is a ConnectionError or has one of those connection errnos",
       ),
       rationale="decision, beyond Flink: Python's convention, where OSError's constructor "
       "picks the subclass from the errno and callers branch on either, so that retry logic "
       "tells a missing object, an unreachable store and a refused request apart; Flink's "
       "Java exceptions carry their class only.",
       spec=("decision",)),
    _c("BAD-15", "MUST", (), "paths past the file system's limit fail typed",
       "With a checkpoint directory so long that the paths made below it pass the store's "
       "limit, every step either succeeds or raises OSError or ValueError, and nothing else; "
       "a storage that refuses the directory at make_storage meets this.",
       conditions=(
           "every backend; a checkpoint directory that is also the default savepoint "
           "directory, below the test's root, whose URL is 4030 or 4075 characters long "
           "(segments of at most 200 characters)",
           "the paths below it pass the local file system's limit of 4096 bytes (Linux's "
           "PATH_MAX) at the state files and _metadata, or already at the job's directories; "
           "an object store's keys pass S3's limit of 1024 bytes",
           "steps: make_storage with create_checkpoint_storage, initializing the base "
           "locations and checkpoint 1's location, closing a stream of 3000 bytes of its "
           "state, finalizing its _metadata",
           "steps: a savepoint at the default directory, resolve_checkpoint of <checkpoint "
           "directory>/<job id>/chk-1",
       ),
       rationale="decision: a path the store cannot hold is the store's refusal or bad "
       "input, never a crash inside the storage; Flink's IOException.",
       spec=("decision",)),
    _c("BAD-16", "SHOULD", (), "the file system's errno is kept",
       "On the local file system, a storage keeps the errno of the file system's own "
       "refusal: where a path is too long, every OSError other than a FileNotFoundError "
       "carries errno ENAMETOOLONG, which Python's OSError maps to no subclass.",
       conditions=(
           "BAD-15's steps that create directories or files (all but make_storage and "
           "resolve_checkpoint)",
       ),
       rationale="decision, beyond Flink: a storage that wraps a file system's failure keeps "
       "its errno where BAD-14 allows, so that callers tell a name too long from a full "
       "disk, ENOSPC, or a denied access, EACCES, without parsing messages; Flink's Java "
       "exceptions carry their class only.",
       spec=("decision",)),
    _c("BAD-17", "MUST", (), "hostile text of any length is answered in bounded time",
       "resolve_checkpoint, initialize_location_for_savepoint and make_storage answer "
       "hostile text of any length within a second: TypeError, ValueError, OSError, or "
       "accepting a target or directory.",
       conditions=(
           "a pointer (storage or access), savepoint target or checkpoint directory of hostile "
           "text up to 1 MB: letters, 'a://', '=' or 'x/../' repeated",
           "each shape from 16 KiB, doubled up to 1 MB; the suite allows 2 seconds",
       ),
       rationale="decision; Flink's Path normalises 'x/../' pairs in quadratic time.",
       spec=("decision",)),
    # ------------------------------------------------------------------ SPK
    _c("SPK-1", "MUST", (), "storages ship to executors",
       "A storage pickled on the coordinator and unpickled by tasks in other processes "
       "creates its access for the job, resolves the checkpoint's location from its location "
       "reference and writes state from several threads per task; every handle the tasks "
       "return reads exactly the bytes written when the coordinator reads it.",
       conditions=(
           "Spark executors' Python workers, every task in a fresh one",
           "resolve_checkpoint_storage_location; exclusive and shared state, and task-owned "
           "state where task-owned-state is claimed",
       ),
       rationale="seed 000: storages are distributed across parallel processes; seed 003: "
       "several threads create streams concurrently.",
       spec=("seed 000", "seed 003", "CS1")),
    _c("SPK-2", "MUST", (), "concurrent tasks never share a file",
       "File-backed handles returned by concurrent tasks in different processes name "
       "distinct files, and no handle reads another stream's bytes: state file names are "
       "unique across processes, not only across the threads of one.",
       conditions=("tasks on Spark executors, several threads each",),
       rationale="Flink names state files with random UUIDs.",
       spec=("seed 003", "L3", "S11")),
    _c("SPK-3", "MUST", (), "checkpoints complete and restore across processes",
       "Checkpoints whose state tasks on executors wrote complete on the coordinator and "
       "restore: after the earlier checkpoints' locations are disposed, a fresh storage "
       "resolves the latest pointer and tasks on executors read every byte as written.",
       conditions=(
           "_metadata holds the pickled handles; several checkpoints in a row, later ones "
           "still referencing shared state of earlier ones",
           "the restoring tasks receive only the handles taken out of _metadata, their "
           "process configured with a storage of the same configuration",
       ),
       spec=("seed 000", "MD6", "MD7")),
    _c("SPK-4", "MUST", (), "handles use the reader's configuration",
       "On object stores, a handle read in a process where a storage for its scheme and "
       "bucket was unpickled reaches the store with that storage's configuration, also when "
       "it differs from the writer's: every read goes through the reader's endpoint, signed "
       "with the reader's key.",
       conditions=(
           "another endpoint route to the same store; other credentials where the server "
           "accepts any",
           "never configuration carried over from the writer's process or a scheme default",
           "in a Spark executor, and in a plain fresh process, where the completed "
           "location's disposal goes through the reader's endpoint too",
       ),
       rationale="decision: handles read elsewhere, ARCHITECTURE section 3.",
       spec=("decision",)),
    _c("SPK-5", "MUST", (), "handles use the process-wide configuration",
       "On object stores, a handle read in a process where no storage was unpickled reaches "
       "the store through the scheme's process-wide configuration, and a storage whose "
       "storage_options name no endpoint takes botocore's AWS_ENDPOINT_URL_S3.",
       conditions=(
           "a Spark executor, and a plain fresh process, where the completed location's "
           "metadata handle reads too",
           "the suite sets fsspec's FSSPEC_<SCHEME>_<OPTION> variables (endpoint_url, key, "
           "secret) and, for S3, AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID and "
           "AWS_SECRET_ACCESS_KEY, all naming one route; every read goes through that route",
           "on S3, in the coordinator's process: storages whose storage_options name no "
           "endpoint (neither endpoint_url nor client_kwargs' endpoint_url; keys only, a key "
           "and secret of their own where the server accepts any)",
           "there one writes 3000 bytes of state and finalizes a checkpoint whose _metadata "
           "holds the pickled handle; a second one resolves the pointer and the handle taken "
           "out of _metadata reads the bytes back",
           "every request, at least one GetObject among them, through that route",
       ),
       rationale="decision: ckptstore.api's third rule for handles read elsewhere, following "
       "fsspec's convention for any URL, and botocore's for any S3 client.",
       spec=("decision",)),
    _c("SPK-6", "MUST", (), "unreachable endpoints fail fast, typed, without secrets",
       "On object stores, a handle read in a process whose storage for its bucket names an "
       "endpoint that refuses connections fails within 15 seconds with an OSError whose "
       "message names that endpoint (host and port) and does not contain the storage's "
       "secret.",
       conditions=("tasks on Spark executors",),
       rationale="decision; as Flink's IOException.",
       spec=("decision",)),
    _c("SPK-7", "MUST", (), "aborted checkpoints leave nothing",
       "When the coordinator aborts a checkpoint that tasks on executors wrote state into, "
       "dispose_on_failure removes the exclusive state those tasks wrote, and discarding the "
       "shared and task-owned handles they returned removes those files: no file of the "
       "aborted checkpoint remains.",
       conditions=("files the coordinator's process never saw",),
       rationale="DIS-1 across processes.",
       spec=("ACC12", "MD7")),
    _c("SPK-8", "MUST", ("savepoints",), "savepoints written on executors restore",
       "Tasks on executors resolve a savepoint location from its location reference and "
       "write state into it; the coordinator finalizes the savepoint, a fresh storage "
       "resolves its pointer and tasks on executors read every handle of its _metadata as "
       "written.",
       conditions=(
           "where relocatable-savepoints is claimed: also after the savepoint directory was "
           "moved and the handles of its exclusive state were rebased with resolve_handle on "
           "the coordinator",
       ),
       spec=("seed 001", "ACC8", "L5")),
    _c("SPK-9", "MUST", (), "request counts hold on executors",
       "On executors, the worker path sends no HeadObject, HeadBucket or List request, and "
       "restoring tasks read handles without HeadObject or List requests.",
       conditions=(
           "counted at the server while tasks on executors run",
           "the worker path: unpickling the storage, resolving the location, writing every "
           "stream",
           "where inline-state is claimed: inline state sends nothing, and each file-backed "
           "state below the multipart size is one PutObject and nothing else is sent",
       ),
       rationale="NOX-1, NOX-3 and NOX-4 on executors.",
       spec=("S1", "seed 002")),
    # ------------------------------------------------------------------ REQ
    _c("REQ-1", "MUST", (), "coordinator requests do not grow with the task count",
       "Initializing a checkpoint's location and writing and finalizing its _metadata sends "
       "the same number of requests, at most 4, whatever the number of tasks that wrote "
       "state into the checkpoint.",
       conditions=(
           "an object store with a request ledger; 2 or 12 tasks",
           "also through a route to a server that ignores conditional writes (If-None-Match "
           "removed)",
           "once the storage has set up its base locations there",
       ),
       rationale="decision; AWS's per-prefix request rates make per-task coordinator "
       "requests a scaling limit.",
       spec=("decision", "S1")),
    _c("REQ-2", "MUST", (), "restores read each file once",
       "Restoring tasks read each file-backed handle with one GetObject request and nothing "
       "else: no HeadObject, no List; a handle of zero bytes needs at most one GetObject, as a "
       "handle knows its size, also a size of 0.",
       conditions=(
           "tasks reading every handle of a finalized checkpoint (each below 5 MiB): one "
           "GetObject per file-backed handle",
           "the metadata_handle of a completed or a resolved checkpoint whose _metadata is "
           "empty: zero bytes with at most one GetObject",
       ),
       rationale="decision; pain point P1: existence checks before reads.",
       spec=("decision", "S1")),
    _c("REQ-3", "MUST", (), "throttled checkpoints complete",
       "Throttling is retried with backoff, never a failure by itself: a throttled checkpoint "
       "completes and restores byte for byte; throttling without end fails the operation "
       "with an OSError in bounded time instead of holding the checkpoint.",
       conditions=(
           "the server throttles PutObject per key prefix as S3 does: 503 SlowDown with S3's "
           "own body beyond 10 requests per second, bursts of 2; a checkpoint of 8 tasks",
           "the next checkpoint, the PutObject of its _metadata answered SlowDown three times "
           "in a row",
           "every PutObject of a state file answered SlowDown without end: closing a stream "
           "of 8192 bytes fails with an OSError within 30 seconds",
       ),
       rationale="FLINK-40387: SlowDown storms during large checkpoints. A prefix throttled "
       "for a second or two needs more attempts than a transient fault does; S3A counts "
       "throttling retries apart from other retries for this reason, and its "
       "fs.s3a.retry.throttle.limit bounds them.",
       spec=("decision",)),
    _c("REQ-4", "MUST", (), "a lost answer after commit never fails a checkpoint",
       "When the server carries out a PutObject and its answer is lost, the checkpoint still "
       "completes, its pointer resolves and every handle reads its bytes: a storage that "
       "retries a conditional write and finds the object there checks that it is its own.",
       conditions=("the connection drops after the commit, for state files and for "
                   "_metadata",),
       rationale="decision; FLINK-9325, FLINK-17808.",
       spec=("decision", "MD2")),
    _c("REQ-5", "MUST", (), "faults never lose or expose data",
       "Under faults every checkpoint either completes and restores byte for byte, or fails "
       "with an OSError and, after dispose_on_failure, leaves no object of its exclusive "
       "state; a finalized _metadata never points at missing or partial state.",
       conditions=(
           "10% of PutObject and GetObject requests failing: 500 InternalError, 503 SlowDown, "
           "dropped connections, before and after the commit",
       ),
       rationale="decision; FLINK-9325, FLINK-17808.",
       spec=("decision", "MD7")),
    _c("REQ-6", "MUST", ("retry-budget",), "an operation keeps to its retry budget",
       "With retry_attempts A and retry_seconds S, an operation that keeps failing raises an "
       "OSError within S + 5 seconds, after exactly A requests where each is answered with an "
       "error (the budget spent, not exceeded); without these keys, a budget set in the "
       "client's own settings holds. The storage_options given are left unmodified.",
       conditions=(
           "A=3, S=9.5 (a float, as the options catalog allows); and A=2, S=4.0",
           "every PutObject of a state file answered 500 InternalError: closing a "
           "file-backed stream fails after exactly A PutObject requests for that file",
           "A=2, S=4.0, every PutObject answered 503 SlowDown (throttling spends the budget "
           "the user set); A=2 alone (no retry_seconds): within 30 seconds",
           "only the first A - 1 PutObjects answered 500: the close returns a handle that "
           "reads the bytes written",
           "A=2, S=4.0, and S=4.0 alone: the server hangs on every PutObject (no answer for "
           "60 seconds)",
           "A=2, S=4.0, and S=4.0 alone: every GetObject's answer stops after the first byte "
           "of its body (for 60 seconds); reading a file-backed handle fails (the budget "
           "covers a transfer, not only its request)",
           "neither key: config_kwargs retries {max_attempts: 0} (botocore's count of retries "
           "after the first request): a PutObject answered 500 every time is sent once per "
           "file; {total_max_attempts: 2} (its count of requests): twice",
           "AWS_MAX_ATTEMPTS=2 in the environment when the storage is made (botocore reads "
           "it when it makes a client): twice; with max_attempts 0 as well: once (botocore's "
           "precedence: its config over the environment)",
           "AWS_RETRY_MODE=standard alone: a PutObject answered 503 SlowDown every time is "
           "sent three times per file (that mode's own limit)",
           "s3fs's own retries 4 (its loop repeats a call that failed on its connection) do "
           "not multiply retry_attempts 2",
           "there, while the server drops every PutObject's connection: at most four "
           "PutObjects per file (two attempts, each of which the HTTP client may send again "
           "once on a new connection, as aiohttp does for idempotent requests)",
       ),
       rationale="decision: a bounded retry budget the storage exposes as configuration, as "
       "S3A's fs.s3a.attempts.maximum and fs.s3a.connection.request.timeout.",
       spec=("decision",)),
    _c("REQ-13", "MUST", ("retry-budget",), "a retry budget bounds a whole call",
       "With retry_seconds S, every public call that sends requests fails with an OSError "
       "within S + 5 seconds as a whole, however many requests it makes, while the server "
       "accepts connections and never answers.",
       conditions=(
           "S=6",
           "closing a file-backed stream, finalizing, resolving, disposing, reading, "
           "discarding, duplicating",
       ),
       rationale="decision; Flink's failed close deletes its file, T-SOS8: a request with its "
       "own budget.",
       spec=("decision", "T-SOS8")),
    _c("REQ-7", "MUST", (), "disposal aborts open multipart uploads",
       "dispose_on_failure of a checkpoint location aborts the multipart uploads still open "
       "below it, and none beside it.",
       conditions=(
           "an object store; an upload left open by a writer that crashed mid-upload",
           "uploads open below chk-<n>0 and chk-<n>-x, whose names start like the "
           "location's, stay open",
       ),
       rationale="decision: none of their parts would ever be deleted otherwise; another "
       "checkpoint's writer may still be sending those beside it.",
       spec=("decision", "MD7")),
    _c("REQ-8", "MUST", ("inline-state",), "a delete reports what happened",
       "discard_state() of a handle reports what happened: while the delete is refused it "
       "raises an "
       "OSError and the state still reads its bytes; a delete carried out whose answer was "
       "lost counts as done, and the file is gone.",
       conditions=(
           "an object store with a request ledger; every DeleteObject of a state file "
           "answered 500 InternalError: discard_state() raises within 30 seconds",
           "also while every HeadObject of the file is answered so too (a storage that cannot "
           "tell the file is gone does not report it gone)",
           "every DeleteObject carried out and its answer lost (the connection drops after "
           "the delete): discard_state() returns within 30 seconds",
           "retry_attempts 1 and retry_seconds 5 where retry-budget is claimed",
       ),
       rationale="As Flink: H2, FLINK-26450, a failed delete asks whether the file is gone, "
       "IOException if it is still there.",
       spec=("H2", "decision")),
    _c("REQ-9", "MUST", ("inline-state",), "disposal reads every page of a listing",
       "Disposal reads every page of a listing: dispose_on_failure and "
       "dispose_storage_location leave no object and no open upload in the checkpoint's "
       "directories, however few entries a page holds.",
       conditions=(
           "an object store with a request ledger that answers listings two entries at a "
           "time: ListObjectsV2, ListObjects and ListMultipartUploads (S3 pages them at 1000 "
           "entries and may return fewer than asked)",
           "dispose_on_failure of a location holding 5 exclusive state files and 4 multipart "
           "uploads left open beside them",
           "two of those uploads of one key, as a CreateMultipartUpload sent again after its "
           "answer was lost leaves them, with a page ending between the two",
           "dispose_storage_location of a completed checkpoint holding 5 exclusive state "
           "files; the directories of those files and of its _metadata",
       ),
       rationale="decision: DIS-1, DIS-2 and REQ-7 for checkpoints of more than one page; "
       "Flink's recursive delete lists every page.",
       spec=("MD6", "MD7", "decision")),
    _c("REQ-10", "MUST", ("inline-state",), "disposal reports what it could not delete",
       "A disposal that could not delete raises an OSError, never a silent success, and "
       "every state file still reads its bytes.",
       conditions=(
           "an object store with a request ledger; the server refuses every deletion: "
           "DeleteObject answered 403 AccessDenied",
           "DeleteObjects answered 200 with an AccessDenied <Error> for each key, as S3 "
           "reports objects it did not delete",
           "dispose_on_failure of a location and dispose_storage_location of a completed "
           "checkpoint, each holding 3 exclusive state files, each raise within 30 seconds",
           "retry_attempts 1 and retry_seconds 5 where retry-budget is claimed",
       ),
       rationale="decision, as REQ-8 for one file: Flink's FileSystem.delete throws an "
       "IOException, S3A's a MultiObjectDeleteException.",
       spec=("MD6", "MD7", "decision")),
    _c("REQ-11", "MUST", ("inline-state",), "disposal without multipart listings",
       "Where the server does not implement ListMultipartUploads, dispose_on_failure and "
       "dispose_storage_location raise nothing and still delete every object in the "
       "checkpoint's directories.",
       conditions=(
           "an object store with a request ledger answering every ListMultipartUploads with "
           "501 NotImplemented, again with 405 MethodNotAllowed, and again with a 501 without "
           "a body (no error code, only the status)",
           "S3-compatible servers without that listing answer so",
           "a location and a completed checkpoint, each holding 3 exclusive state files; the "
           "directories of those files and of the _metadata",
       ),
       rationale="decision: the open uploads cannot be found there, and failing the disposal "
       "would leave every state file behind; Flink's disposal never lists uploads.",
       spec=("MD6", "MD7", "decision")),
    _c("REQ-12", "MUST", (), "a dropped connection is an OSError",
       "A connection the server drops mid-request fails the read with an OSError within 15 "
       "seconds that names the server's host and port, and the next read of the handle from "
       "the same thread returns its bytes within 15 seconds: the storage connects anew.",
       conditions=(
           "backends whose server can drop a client's connection mid-request (the sftp leg)",
           "the server drops it instead of answering the OPEN, a READ or the CLOSE of a "
           "file-backed state's file; opening and reading the handle",
           "for the CLOSE: the read returns the state's bytes or raises such an OSError",
       ),
       rationale="decision: servers drop idle and overloaded connections, and a task thread "
       "that read once through a dropped connection must not fail every later read.",
       spec=("decision",)),
    # ------------------------------------------------------------------ FLK
    _c("FLK-1", "MUST", (), "Flink reads it",
       "A checkpoint and a savepoint written through the storage load in Flink 2.3.0's own "
       "loader, and every file Flink's handles name holds the bytes the task wrote.",
       conditions=(
           "3 subtasks, 6 states each: exclusive, shared and task-owned where claimed, around "
           "the inline threshold where claimed; the handles as Flink's in a version 6 _metadata",
           "a checkpoint that also references the shared state of the one before, and a "
           "savepoint",
           "Checkpoints.loadCheckpointMetadata on the _metadata bytes with the external pointer",
           "on file paths Flink reads every file through its handle; on other schemes the kit "
           "reads the path Flink names with the backend's options",
           "each handle's state size is the number of bytes written",
       ),
       rationale="Flink restores a checkpoint only through its own loader: a handle's path is "
       "read by Flink's Path and file systems (PATH, H1), relative handles are joined to the "
       "pointer's directory (H5). Beyond Flink: a path that fsspec reads, such as "
       "local:///dir, may be one that Flink's Path cannot.",
       spec=("H1", "H5", "PATH")),
]
# fmt: on


def _versions(cid: str) -> tuple[str, tuple[str, ...]]:
    """The version that introduced clause ``cid`` and those that tightened it."""
    since = [version for version, ids in INTRODUCED.items() if cid in ids]
    if len(since) != 1:
        raise ValueError(
            f"clause {cid}: introduced by {since or 'no version'}; list it under exactly one "
            "version of INTRODUCED in ckptconform/clause_versions.py (a new clause: the next)"
        )
    return since[0], tuple(version for version, ids in TIGHTENED.items() if cid in ids)


def _build() -> dict[str, Clause]:
    clauses: dict[str, Clause] = {}
    for clause in _CATALOG:
        cid = clause.id
        if cid in clauses:
            raise ValueError(f"duplicate clause id {cid}")
        if clause.group not in GROUPS or clause.group in RESERVED_GROUPS:
            raise ValueError(f"clause {cid}: unknown or reserved group {clause.group}")
        if clause.level not in ("MUST", "SHOULD"):
            raise ValueError(f"clause {cid}: level must be MUST or SHOULD, got {clause.level}")
        unknown = set(clause.capabilities) - set(CAPABILITIES)
        if unknown:
            raise ValueError(f"clause {cid}: unknown capabilities {sorted(unknown)}")
        if not clause.conditions:
            raise ValueError(f"clause {cid}: no conditions")
        since, tightened = _versions(cid)
        clauses[cid] = replace(clause, since=since, tightened=tightened)
    listed = {cid for ids in (*INTRODUCED.values(), *TIGHTENED.values()) for cid in ids}
    if listed - clauses.keys():
        raise ValueError(f"clause_versions lists unknown clauses {sorted(listed - clauses.keys())}")
    return clauses


#: Every clause by id, in catalog order (grouped as in GROUPS).
CLAUSES: dict[str, Clause] = _build()


def clauses_of(group: str) -> list[Clause]:
    """The clauses of one group, in catalog order (empty for reserved groups)."""
    return [c for c in CLAUSES.values() if c.group == group]
