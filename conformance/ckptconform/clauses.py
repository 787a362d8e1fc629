"""The normative clause catalog of the conformance suite.

Every test of the suite names the clauses it checks (``@pytest.mark.clause("INL-1")``); the
plugin reads this catalog to validate those ids, to skip clauses whose capability a target does
not claim, and to print the clause report. Ids are stable once published: a clause may be
reworded, never renumbered or reused.

Sources. Each clause says which source it follows: the seed documents (Flink's javadoc and
PyFlink's pages, ``seed 000`` .. ``seed 004``), Flink's code and tests as digested in
``flink-checkpoint-storage.md`` (ids such as ``S7`` or ``T-BASE1``), or a decision of this
project (``decision``) where Flink has no rule or a known bug. A clause asserts only behaviour
visible through ``ckptstore.api`` and on the backend itself (raw listings, request counts),
never an implementation's classes, temporary file names or one file system's quirks.

Levels. A MUST clause fails the run; a SHOULD clause is reported as a warning unless the run is
strict. A MUST clause depends on an optional capability only when it is about that capability.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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
    """One normative statement: what an implementation must (or should) do."""

    id: str
    group: str
    level: Literal["MUST", "SHOULD"]
    capabilities: tuple[str, ...]
    title: str
    text: str
    spec: tuple[str, ...]


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
    "per operation, >= 1) and retry_seconds (seconds per operation), and gives up within them.",
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
            "a finite number > 0 (int or float, not a bool): seconds per operation (the suite "
            "passes 4.0, 5, 9.5 and 30); BAD-9 passes 0, -1, NaN, infinity, True and '5' and "
            "expects an error",
            "The retry budget's time: how long one operation may take, retries and a server "
            "that does not answer included, before it gives up with an OSError.",
            "retry-budget",
            "in REQ-6's test (with retry_attempts, and alone), in BAD-8's test when the target "
            "claims retry-budget, alone in BAD-9's test of invalid budgets and with "
            "retry_attempts in its test of a valid one.",
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
}

#: What a reader needs to know about a group before its clauses (CONFORMANCE.md).
GROUP_NOTES: dict[str, str] = {
    "SPK": "These clauses run on the Spark leg (`ckptconform.spark`, `--spark-master`, default "
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
}

#: Groups that exist but have no clauses yet (later issues add them).
RESERVED_GROUPS: tuple[str, ...] = ()

# (id, level, capabilities, title, text, spec refs)
# fmt: off
_RAW: list[tuple[str, str, tuple[str, ...], str, str, tuple[str, ...]]] = [
    # ------------------------------------------------------------------ SER
    ("SER-1", "MUST", (), "storage survives pickle and cloudpickle",
     "A CheckpointStorage, fresh or already used, survives pickle and cloudpickle, and the copy "
     "creates accesses, writes state and resolves the same pointers as the original (seed 000: "
     "implementations need to be serializable).",
     ("seed 000", "seed 003", "CS1")),
    ("SER-2", "MUST", (), "handles survive pickling",
     "State handles (inline and file-backed) survive pickle and cloudpickle; the copy has the "
     "same state_size and reads the same bytes (Flink handles are Serializable).",
     ("H1", "H4", "MD6")),
    ("SER-3", "MUST", (), "references and completed locations survive pickling",
     "Location references survive pickling with equality and default-ness intact, and completed "
     "checkpoint locations survive pickling with the same external_pointer and metadata bytes.",
     ("REF1", "MD6")),
    ("SER-4", "MUST", (), "objects work in a fresh process",
     "A storage, handles, location references and completed locations unpickled in a fresh "
     "Python process work there: handles read the same bytes, also when the storage and they "
     "are all that process unpickled yet and the storage made nothing there (an executor "
     "restoring state), among them those of a savepoint written to a target in another bucket "
     "than the storage's directories, on the same store (ckptstore.api's rule for handles read "
     "elsewhere, first rule: the same store whatever the bucket, as Flink configures a scheme's "
     "file system once for all its buckets), the completed location's metadata handle reads "
     "too, the pointer resolves, the "
     "resolved location's resolve_handle gives handles that read the same bytes, and state "
     "written there (exclusive and task-owned) reads back in the original process (seed 000: "
     "storages are distributed across parallel processes).",
     ("seed 000", "seed 003")),
    ("SER-5", "MUST", (), "storage pickle is small",
     "A storage pickles to less than 4 KiB, also after use: it holds configuration only, no "
     "clients, caches or locks (seed 000: 'contain only configurations').",
     ("seed 000", "CS1")),
    ("SER-6", "SHOULD", (), "storage pickle under 1 KiB",
     "A storage pickles to less than 1 KiB and its pickle does not grow with use (decision, "
     "following seed 000's 'very lightweight').",
     ("seed 000", "decision")),
    ("SER-7", "SHOULD", (), "file handle pickle under 1 KiB",
     "A file-backed state handle pickles to less than 1 KiB: a path and a size, never a file "
     "system instance (Flink's FileStateHandle holds a path and a size).",
     ("H1", "decision")),
    ("SER-8", "MUST", (), "each storage keeps its own route to a shared bucket",
     "On object stores, when two storages in one process reach the same bucket through "
     "different endpoint URLs, the handles and completed checkpoints of each (as written, and "
     "as resolved from its pointer) read and dispose through the endpoint of the storage that "
     "wrote them, also after a storage with the other endpoint was made, and everything the "
     "storage made first does after that, with objects it made before (a checkpoint's "
     "location and its stream factory: writing, duplicating where fast-duplicate is claimed, "
     "finalizing; another checkpoint's location: dispose_on_failure; a savepoint location; a "
     "second access: its setup; the completed locations: reading their metadata, disposal) "
     "and with new ones (initializing a checkpoint's location, writing "
     "exclusive, shared and task-owned state, duplicating state into task-owned state with "
     "the toolset where fast-duplicate is claimed, a savepoint at the default savepoint "
     "directory where savepoints is claimed, dispose_on_failure) sends its requests through "
     "its own endpoint only; so do its handles and completed location read in a fresh "
     "process that unpickled both storages, the other's last. Routes that differ by region "
     "only: on S3, where the server accepts any credentials, two storages whose "
     "storage_options name no endpoint (the S3 client takes AWS_ENDPOINT_URL_S3) and differ "
     "only by client_kwargs['region_name'] (us-east-1, eu-west-1) reach one bucket; every "
     "request of the first one's checkpoint (state and metadata written, finalized), of the "
     "second one's made after it, of reading the first one's handles and completed "
     "checkpoint as written (the first thing it does after the second was made), then as "
     "resolved from its pointer through it, then the second's likewise, and of disposing of "
     "each resolved checkpoint is signed for the region of the storage that wrote them "
     "(decision: "
     "ckptstore.api's rule for handles read elsewhere, first rule; a process may serve two jobs "
     "that reach one bucket by different routes, and the storage made last must not redirect "
     "the other's requests).",
     ("decision",)),
    # ------------------------------------------------------------------ THR
    ("THR-1", "MUST", (), "concurrent streams keep their own bytes",
     "Many threads creating and writing streams at once on one storage, one access and one "
     "factory (also factories resolved meanwhile and task-owned streams of the access) each get "
     "a handle that reads back exactly their own bytes, and no two streams share a file: where "
     "file-layout is claimed, the job directory then holds exactly one file per file-backed "
     "handle; all threads finish within 120 seconds (seed 000: 'Multiple threads may be "
     "creating streams concurrently').",
     ("seed 000", "seed 003", "S11")),
    ("THR-2", "MUST", (), "concurrent coordinator and worker calls",
     "create_checkpoint_storage, initialize_location_for_checkpoint (distinct ids), "
     "resolve_checkpoint_storage_location, finalization and resolve_checkpoint called from many "
     "threads at once on one storage behave as if called one at a time, and all threads finish "
     "within 120 seconds (seed 000: thread-safe).",
     ("seed 000",)),
    ("THR-3", "MUST", (), "close from another thread",
     "close() called from another thread while a stream is being written returns, leaves the "
     "stream closed (later writes raise OSError or ValueError) and leaves no file of that stream "
     "(Flink FLINK-28984: a close racing with file creation still deletes the file).",
     ("S13", "S16", "T-SOS12", "P5")),
    # ------------------------------------------------------------------ STR
    ("STR-1", "MUST", (), "state round-trips whatever the chunking",
     "Bytes written to a state stream in any chunking, in either scope, read back identically "
     "through the handle from close_and_get_handle(), any number of times, each read starting at "
     "the first byte, and its state_size is their number or -1 (unknown) (seed 000: raw bytes "
     "storage; Flink T-SOS5).",
     ("seed 000", "S12", "T-SOS5")),
    ("STR-2", "SHOULD", (), "state_size is exact",
     "A handle's state_size equals the number of bytes written (Flink records the file position; "
     "-1 only when that fails).",
     ("S12", "H1")),
    ("STR-3", "MUST", (), "empty stream gives None",
     "close_and_get_handle() on a stream with nothing written (or only empty writes) returns "
     "None and leaves no file (Flink S12a, FLINK-5218). Flink 2.3.0's JobManager storage "
     "deviates: its MemoryCheckpointOutputStream counts an empty write and returns a 0-byte "
     "handle, unlike its file streams; the contract follows the file streams (a Flink bug: "
     "one interface, two answers, and FLINK-5218 made empty writes count as nothing).",
     ("S12", "T-SOS2", "MEM4")),
    ("STR-4", "MUST", (), "tell counts every byte",
     "tell() equals the number of bytes written so far, across chunk and buffer boundaries, "
     "and write() returns the number of bytes it was given, 0 for an empty write (Flink getPos, "
     "T-SOS6; Python's io: write returns the count).",
     ("S10", "T-SOS6")),
    ("STR-5", "MUST", (), "use after close fails",
     "`closed` is False while a stream is open. After close() or close_and_get_handle(), "
     "write() and close_and_get_handle() raise OSError or ValueError and `closed` is true; an "
     "empty write may instead return 0, as a write of nothing changes no state (Flink S14: "
     "IOException; Flink's file stream takes an empty write after close silently).",
     ("S14", "T-SOS9", "T-SOS10")),
    ("STR-6", "MUST", (), "close discards, idempotently",
     "close() without taking a handle discards the stream: it never raises, can be repeated, and "
     "leaves no file of the stream, also on S3 backends with a request ledger while every "
     "AbortMultipartUpload is answered 500 after 12 MiB were written to a stream given s3fs's "
     "default_block_size of 5 MiB in its storage_options (a multipart upload is open; "
     "retry_attempts 1 and retry_seconds 5 where retry-budget is claimed): a failed cleanup is "
     "no failure of close(); close() after close_and_get_handle() keeps the state readable "
     "(Flink S13, T-CSOS3).",
     ("S13", "S14", "T-CSOS3")),
    ("STR-7", "MUST", (), "context manager",
     "A stream used as a context manager is discarded when the block ends without a handle "
     "(it is closed and leaves no file), exceptions from the block propagate, and a handle "
     "taken inside the block stays valid after it (Flink T-SOS10 try-with-resources).",
     ("T-SOS10", "decision")),
    ("STR-8", "MUST", (), "written bytes are copied",
     "write() accepts bytes, bytearray and memoryview and stores the bytes as they were at the "
     "call: changing the caller's buffer afterwards does not change the state, and write() never "
     "modifies the caller's buffer (Flink T-SOS5 checks the source array).",
     ("S6", "T-SOS5")),
    ("STR-9", "MUST", (), "flush keeps the stream open",
     "flush() neither ends the stream nor loses bytes: writes after a flush are part of the same "
     "state.",
     ("S9",)),
    ("STR-10", "MUST", (), "as_bytes_if_in_memory",
     "as_bytes_if_in_memory() of a handle returns either None or exactly the state's bytes, and "
     "None for handles that name a file (Flink H4).",
     ("H4",)),
    ("STR-12", "MUST", (), "input streams seek",
     "The stream open_input_stream() returns, for a file-backed and an inline handle alike, is "
     "readable() and seekable(); seek(n) from the start to any n in [0, state size] returns n, "
     "then tell() answers n and read() returns the state from byte n on; read(k) returns at "
     "most k bytes, and tell() answers the state size once everything is read (Flink "
     "FSDataInputStream.seek/getPos: restores of operator and keyed state seek to offsets "
     "within one state file).",
     ("decision", "H1")),
    ("STR-13", "SHOULD", (), "input streams read into buffers",
     "The stream open_input_stream() returns also offers readinto(buffer) and read1(k) as "
     "Python's binary files do (io.BufferedIOBase): after seek(5) it fills a 64-byte buffer "
     "with the next bytes, returns their number and advances tell() by it, and read1(16) then "
     "returns between 1 and 16 of the bytes that follow; seek(2, SEEK_CUR), seek(-4, "
     "SEEK_CUR) from position 10 and seek(-7, SEEK_END) return the positions io gives, "
     "tell() then answers the same, and read(None), read(3) and read(-1) return the state's "
     "bytes from there; seek(-1) (a negative position from the start) raises ValueError or "
     "OSError, as Python's files do, and leaves the position where it was (tell() and the "
     "next read(4) show it); readinto() or read1() as the first call on the "
     "stream of a file-backed handle whose file was discarded raises FileNotFoundError, as "
     "read() does (DIS-6) (decision, beyond Flink, whose FSDataInputStream "
     "seeks from the start only: readers that fill "
     "preallocated buffers, such as numpy's and pyarrow's, take any binary file).",
     ("decision",)),
    ("STR-11", "SHOULD", ("inline-state",), "state beyond the write buffer reaches the file",
     "Once more bytes are written to a stream than its write_buffer_size holds, the bytes beyond "
     "the buffer are in the stream's file before close_and_get_handle() (so a stream holds at "
     "most its buffer in memory, whatever the state's size), and flush() sends the buffered "
     "bytes to the file once more than the inline threshold is written. Checked on file "
     "systems whose files show their bytes before they are closed (the local leg); object "
     "stores commit a file whole (Flink S5, S6, S8, S9: the buffer is written to the file "
     "whenever it is full).",
     ("S5", "S6", "S8", "S9")),
    ("STR-14", "MUST", (), "large state round-trips in parts",
     "15 MiB of state, written as twelve 1 MiB writes and one 3 MiB write, reads back "
     "identically through the handle in either scope, with state_size 15 MiB or -1; a second "
     "stream of as "
     "much state closed without taking a handle leaves no file and, on S3 backends, no open "
     "multipart upload (its parts would cost storage until a lifecycle rule, if any, removes "
     "them). On S3 backends the storage "
     "gets s3fs's default_block_size of 5 MiB in its storage_options, so that a storage on "
     "s3fs uploads the state in several parts (a multipart upload) instead of one request, "
     "and where a ledger counts requests it does so: no PutObject of the state's key, and at "
     "least three UploadParts of at most 5 MiB of state each (s3fs's meaning of "
     "default_block_size, which bounds the memory an upload holds); with the same "
     "default_block_size, state written as five 3 MiB writes, and as writes of 5 MiB - 1 "
     "bytes, 2 bytes and 3 MiB (writes that straddle the 5 MiB parts, one of them with a "
     "single byte of room left in the first part), each write of other bytes, is written and "
     "committed within 30 seconds and reads back byte for byte, and so are the five 3 MiB "
     "writes with s3fs's s3_additional_kwargs {'ChecksumAlgorithm': 'SHA256'} in the "
     "storage_options (every part then has a SHA256 checksum, which the completion of a "
     "multipart upload repeats); on S3 backends with a ledger, with s3fs's fixed_upload_size "
     "True in the storage_options (stores such as Cloudflare R2 refuse parts of unequal "
     "size), 101 MiB of state written in 1 MiB writes goes up as a multipart upload whose "
     "parts, in part-number order, are all the same size but the last, and reads back; "
     "where the target claims memory-limit, max_state_size is 32 MiB (Flink S5, S6: a "
     "stream writes its buffer out whenever it is full, whatever the state's size).",
     ("S5", "S6", "S13")),
    # ------------------------------------------------------------------ INL
    ("INL-1", "MUST", ("inline-state",), "small state stays inline",
     "State of at most `threshold` bytes, written in writes each smaller than the threshold, is "
     "returned inline (as_bytes_if_in_memory gives the bytes) and creates no file (seed 002: "
     "'State up to this size will be stored as part of the metadata'; Flink S7 is inclusive).",
     ("seed 002", "S7", "T-SOS3")),
    ("INL-2", "SHOULD", ("inline-state",), "inline whatever the chunking",
     "State of at most `threshold` bytes stays inline whatever the write chunking, including one "
     "write of exactly `threshold` bytes (decision, beyond Flink: Flink 2.x spills in that "
     "case, T-FSF1; a threshold is a maximum, and the chunking must not decide).",
     ("decision", "S6", "T-FSF1")),
    ("INL-3", "MUST", ("inline-state",), "larger state goes to a file",
     "State of more than `threshold` bytes is stored in a file on the backend that holds exactly "
     "those bytes, and its handle is not inline (seed 002; Flink S7: threshold+1 bytes give a "
     "file).",
     ("seed 002", "S7", "T-SOS4")),
    ("INL-4", "MUST", ("inline-state",), "threshold 0",
     "With threshold 0 every non-empty state goes to a file, and a stream with nothing written "
     "still gives None, not an empty file (Flink S7, testZeroThreshold; S12a).",
     ("S7", "T-SOS5")),
    ("INL-5", "MUST", ("inline-state",), "flush respects the threshold",
     "flush() while at most `threshold` bytes were written creates no file, and the state still "
     "ends inline (Flink S9, FLINK-17820: flush used to create a file per subtask).",
     ("S9", "T-FSF6", "P9")),
    ("INL-6", "MUST", ("inline-state",), "the 1 MiB maximum is accepted",
     "A threshold of 1048576 bytes (1 MiB, MAX_FILE_STATE_THRESHOLD) is accepted and 1 MiB of "
     "state stays inline under it (Flink CS4, CFG4).",
     ("CS4", "CFG4", "seed 002")),
    ("INL-7", "MUST", ("inline-state",), "invalid thresholds are rejected",
     "A threshold above 1048576 or below -1 raises ValueError, at make_storage or at the latest "
     "when the first access or stream is created (Flink CS4, S2: IllegalArgumentException).",
     ("CS4", "S2")),
    ("INL-9", "MUST", ("inline-state",), "invalid write buffer sizes are rejected",
     "A write_buffer_size below -1 (-2, -4096) raises ValueError, at make_storage or at the "
     "latest when the first stream of state is closed (Flink CS4: IllegalArgumentException "
     "'The write buffer size must be not less than '-1''; -1 means the default).",
     ("CS4",)),
    ("INL-8", "SHOULD", ("inline-state",), "default threshold 20 KiB",
     "Without a configured threshold, state up to 20480 bytes stays inline and 20481 bytes go to "
     "a file (Flink CFG4 default since FLINK-17865; PyFlink's '1KB' docstring is stale).",
     ("CFG4", "CS4", "P9")),
    # ------------------------------------------------------------------ LAY
    ("LAY-1", "MUST", ("file-layout",), "job directory",
     "A job's checkpoint data lies below <checkpoint_dir>/<job id>/, where <job id> is "
     "str(JobID): 32 lowercase hex characters (seed 001; Flink L1, L2).",
     ("seed 001", "L1", "L2")),
    ("LAY-2", "MUST", ("file-layout",), "chk-<n> directories",
     "Checkpoint n's exclusive state and _metadata lie in <job dir>/chk-<n>, n in decimal "
     "without zero padding, for every id from 0 to the largest Java long, 2**63-1 (seed 001: "
     "'chk-17'; Flink L1, L2).",
     ("seed 001", "L1", "L2", "S3")),
    ("LAY-3", "MUST", ("file-layout",), "shared/ directory",
     "Shared-scope state of checkpoints lies in <job dir>/shared/ (Flink L1, S3, T-FSA4).",
     ("L1", "S3", "T-FSA4")),
    ("LAY-4", "MUST", ("file-layout",), "files directly in their directory",
     "State files lie directly in their directory (chk-<n>, shared, taskowned, a savepoint "
     "directory), never in sub-directories (Flink L3).",
     ("L3",)),
    ("LAY-5", "MUST", ("file-layout",), "metadata file and pointer",
     "A checkpoint's metadata is the file _metadata in its directory, and its external pointer "
     'names that directory (seed 001: \"\'_metadata\'\"; Flink PTR1, MD4).',
     ("seed 001", "L3", "PTR1", "MD4")),
    ("LAY-6", "MUST", ("file-layout",), "coordinator creates the directories",
     "On file systems with real directories, initialize_base_locations_for_checkpoint creates "
     "shared/ and taskowned/, and initialize_location_for_checkpoint(n) creates chk-<n>, because "
     "workers never create directories; where they cannot be created (the checkpoint directory "
     "is an existing file, or lies below one), both raise OSError and leave the file as it was "
     "(seed 002; Flink ACC5, ACC6, T-FSA5: 'Failed to create directory for shared state', and "
     "its file systems' mkdirs raise for a path below a file).",
     ("seed 002", "ACC5", "ACC6", "T-FSA5")),
    ("LAY-7", "MUST", ("file-layout",), "no leftovers after finalization",
     "After finalization a chk-<n> directory holds exactly _metadata and the files of the "
     "exclusive handles taken from its streams: no temporary or staging files remain; on "
     "object stores, the first job on an endpoint (a fresh route to the server) leaves no "
     "file below its checkpoint directory but those of chk-<n>, whatever its setup wrote "
     "there (decision; Flink commits _metadata with no visible staging file, MD2).",
     ("MD2", "decision")),
    ("LAY-8", "MUST", ("entropy-injection",), "entropy key never reaches the store",
     "With an entropy key in the checkpoint path (a whole segment with entropy_length 4, "
     "inside a segment, 'ent-<key>-x', with entropy_length 1, twice, '<key>/cp/<key>', "
     "with entropy_length 2, the only segment below a bucket of its own with "
     "create_subdir=False, 's3://<bucket>/<key>', with entropy_length 4, or in the path of a "
     "bucket whose name holds the key too, 's3://ckpt-<key>-<random>/<key>/cp', with "
     "entropy_length 3, or as a whole segment, with entropy_length 4, in a storage without "
     "a default savepoint directory), no object written carries the key where it first "
     "occurs (state of every scope, task-owned state and, where fast-duplicate is claimed, "
     "the toolset's duplicates of it and a stream factory's duplicates into both scopes), and "
     "no request "
     "names a key that holds it there (where a ledger counts requests): data files get "
     "entropy_length random alphanumeric characters in its place, the _metadata path and the "
     "external pointer have it removed (a segment left empty goes away: with the key alone "
     "below the bucket the job's setup and checkpoints work and the pointer is "
     "s3://<bucket>/chk-<n>), only the first occurrence being replaced or removed while a "
     "second stays as written, only the URL's path being rewritten while the bucket stays as "
     "named (Flink's EntropyInjector rewrites the URI's path only), and the pointer "
     "resolves, through a fresh storage, to the metadata and state written; with the key, "
     "dispose_on_failure of another checkpoint's location returns, and after "
     "dispose_storage_location the pointer raises FileNotFoundError (Flink E2, E3, E4, E7, "
     "T-ENT1).",
     ("E3", "E4", "E7", "L7", "T-ENT1")),
    ("LAY-9", "MUST", ("entropy-injection",), "invalid entropy options are refused",
     "An entropy_key holding a character Flink forbids (~ # @ * + % { } < > [ ] | \" \\), an "
     "empty entropy_key (''), or an entropy_length of 0 or less with a key set, raises "
     "ValueError (subclasses accepted) when the storage is made, or at the latest when the "
     "job's access is created or initialize_base_locations_for_checkpoint() is called; an "
     "entropy_length that is no integer raises TypeError or ValueError there (Flink E2: "
     "IllegalConfigurationException when the S3 file system is configured, before any file is "
     "written). The empty key goes beyond Flink, which takes it and then fails to create "
     "every data file with an IOException (its EntropyInjector finds '' at the start of every "
     "path, and the path it rewrites no longer starts with '/'): a key that can never work is "
     "refused with the other invalid options, before any checkpoint is attempted.",
     ("E2", "E3", "CFG9")),
    ("LAY-10", "MUST", ("file-layout", "flat-layout"), "flat layout without a job directory",
     "With create_subdir=False, a checkpoint's chk-<n>/ (its exclusive state and _metadata), "
     "shared/ and taskowned/ lie directly in the checkpoint directory, with no <job id> "
     "directory, and its external pointer names <checkpoint_dir>/chk-<n>; with "
     "create_subdir=True they lie in <checkpoint_dir>/<job id>/ as LAY-1 says (Flink CFG3, "
     "FLINK-33057).",
     ("CFG3",)),
    # ------------------------------------------------------------------ PTR
    ("PTR-1", "MUST", (), "pointers resolve",
     "The external_pointer of a finalized checkpoint resolves, through the storage, its accesses "
     "and a fresh storage instance from the same configuration, to a location whose metadata "
     "handle reads the bytes that were written, with state_size their number or -1; where "
     "savepoints is claimed, a storage whose checkpoint directory is on the backend under "
     "test and whose default savepoint directory is a local directory (file://) resolves the "
     "pointers of its checkpoints and of its savepoints alike (seed 001: resolveCheckpoint; "
     "Flink's handle carries the file's length; its resolveCheckpointPointer opens the file "
     "system the pointer's scheme names).",
     ("seed 001", "CS1", "ACC4", "PTR9")),
    ("PTR-2", "MUST", (), "pointer spellings",
     "The checkpoint directory, the directory with a trailing '/', the directory with a '/' "
     "doubled inside its path, and the metadata file all resolve to the same external pointer "
     "and metadata bytes, with state_size their number or -1; on S3, the directory spelt "
     "with s3a:// in place of s3:// reads the same metadata bytes, through the storage and a "
     "fresh one (Flink PTR8, T-BASE1; "
     "Flink's Path collapses runs of '/' and drops a trailing one; Flink's S3 file system "
     "for Hadoop, flink-s3-fs-hadoop, serves both schemes).",
     ("PTR6", "PTR7", "PTR8", "T-BASE1")),
    ("PTR-3", "MUST", (), "stable pointer",
     "Resolving an external pointer gives a location whose external_pointer is the same string, "
     "also for a savepoint directly below the root of the memory file system (memory:///) "
     "(Flink PTR1: the qualified directory).",
     ("PTR1", "PTR9")),
    ("PTR-4", "MUST", (), "pointers resolve anywhere on the file system",
     "A storage resolves pointers written by another storage instance or another job, including "
     "pointers outside its own checkpoint directory, to the same external_pointer, metadata "
     "bytes (state_size their number or -1) and state (read through resolve_handle); two "
     "jobs using the same checkpoint id do not interfere: their pointers differ; where "
     "in-memory-checkpoints is claimed, on the local file system a storage made without a "
     "checkpoint or a savepoint directory resolves them too. A storage made with a checkpoint "
     "directory and no savepoint directory resolves its checkpoints' pointers, through itself "
     "and another instance of the same configuration; where in-memory-checkpoints and "
     "savepoints are claimed, so does a storage made with a savepoint directory and no "
     "checkpoint directory for its savepoints' pointers (Flink "
     "T-BASE3; resolveCheckpointPointer is static).",
     ("T-BASE3", "CS1")),
    ("PTR-5", "MUST", (), "missing arguments",
     "resolve_checkpoint(None) raises TypeError and resolve_checkpoint('') raises ValueError "
     "(Flink PTR2: NullPointerException, IllegalArgumentException).",
     ("PTR2", "T-BASE2")),
    ("PTR-6", "MUST", (), "missing checkpoint",
     "A pointer to a path that does not exist raises FileNotFoundError (Flink PTR5).",
     ("PTR5", "T-BASE2")),
    ("PTR-7", "MUST", (), "no metadata, no checkpoint",
     "A checkpoint directory without _metadata (in flight, aborted, or metadata deleted) does "
     "not resolve: FileNotFoundError (Flink PTR6; the Flink fixture's chk-13). A directory "
     "named _metadata is a directory like any other (Flink PTR5, PTR6: the file system's "
     "answer decides, not the name): with a _metadata file inside it resolves to that file's "
     "bytes, with only another file inside it raises FileNotFoundError.",
     ("PTR5", "PTR6")),
    ("PTR-8", "MUST", (), "invalid pointers",
     "Garbage strings and unknown or unsupported URL schemes raise OSError, and the JobManager's "
     "'<checkpoint-not-externally-addressable>' pointer raises FileNotFoundError (Flink PTR3, "
     "PTR4, PTR10).",
     ("PTR3", "PTR4", "PTR10", "T-BASE2")),
    ("PTR-9", "SHOULD", (), "any metadata file name",
     "A pointer naming a file is taken as the metadata file, whatever the file's name (Flink "
     "PTR7).",
     ("PTR7",)),
    ("PTR-10", "MUST", (), "Flink-written checkpoints resolve",
     "Pointers into checkpoint and savepoint directories written by Apache Flink 2.3.0 resolve "
     "in every spelling to their _metadata bytes, with an external_pointer that names the "
     "directory, and Flink's in-flight chk-13 does not: FileNotFoundError (seed 001).",
     ("seed 001", "PTR5", "PTR6", "PTR8")),
    ("PTR-11", "SHOULD", (), "local path spellings",
     "On the local file system, '/abs/dir', 'file:/abs/dir' and 'file:///abs/dir' name the same "
     "checkpoint (Flink prints pointers as 'file:/...').",
     ("PTR1", "PATH")),
    ("PTR-12", "MUST", (), "highly available storage",
     "A job's supports_highly_available_storage() is true when the storage's completed "
     "checkpoints are externally addressable (their external_pointer resolves through a fresh "
     "storage) and false when their pointer is '<checkpoint-not-externally-addressable>' "
     "(Flink ACC2: the file-system storage answers true; MEM2: the JobManager storage answers "
     "true exactly when a checkpoint directory is set).",
     ("ACC2", "MEM2")),
    ("PTR-13", "SHOULD", (), "Flink's Path normalisation",
     "A pointer spelt with a '.' segment, with a '..' segment that climbs out of the checkpoint "
     "directory and back into it (<dir>/../<its name>) or out of the first directory of its "
     "path and back, spelt as the test's root is (s3://<bucket>/<first>/../<first>/...; "
     "memory:///<first>/../<first>/..., a URL that names no host, whose path starts at its "
     "first segment), or with a '\\' for the "
     "'/' before the directory's last segment resolves to the same external_pointer and "
     "metadata bytes "
     "(Flink's Path turns '\\' into '/' and normalises its URI, which resolves '.' and '..'; "
     "a SHOULD because a '\\' is a legal character of a POSIX file name and an S3 key).",
     ("PATH", "PTR8")),
    # ------------------------------------------------------------------ NOX
    ("NOX-1", "MUST", (), "worker path sends no existence checks",
     "On S3, the worker path (unpickling the storage, create_checkpoint_storage, "
     "resolve_checkpoint_storage_location, creating, writing, closing and finishing state and "
     "task-owned streams) sends no HeadObject, HeadBucket or List request (seed 002: floods of "
     "directory existence checks are prohibitive; Flink S1).",
     ("seed 002", "S1", "P1")),
    ("NOX-2", "MUST", (), "resolving a location costs nothing",
     "create_checkpoint_storage and resolve_checkpoint_storage_location create nothing on the "
     "backend (no file, and where file-layout is claimed on a file system with directories, no "
     "chk-<n> directory) and, on S3, send no request at all (Flink ACC1, ACC9, T-FSA5).",
     ("ACC1", "ACC9", "T-FSA5", "seed 002")),
    ("NOX-3", "MUST", ("inline-state",), "inline streams send nothing",
     "On S3, a stream whose state stays inline sends no request (seed 002: 'no files are "
     "written').",
     ("seed 002", "S7")),
    ("NOX-4", "MUST", ("inline-state",), "one upload per file",
     "On S3, a stream whose state goes to a file costs exactly one PutObject, or one multipart "
     "upload (CreateMultipartUpload, UploadPart..., CompleteMultipartUpload), and nothing else "
     "(seed 002: writes have much higher quotas than HEAD).",
     ("seed 002", "S1", "S11")),
    ("NOX-5", "MUST", ("inline-state",), "discard without existence checks",
     "On S3, discard_state() of a file handle sends a delete and no HeadObject or List request "
     "when the delete succeeds, and the file is gone (Flink H2, T-FSH3).",
     ("H2", "T-FSH2", "T-FSH3", "P1")),
    ("NOX-6", "MUST", (), "resolving a pointer never lists",
     "On S3, resolve_checkpoint sends no List and no HeadBucket request (Flink PTR9: one or two "
     "status calls, never a listing).",
     ("PTR9",)),
    ("NOX-7", "SHOULD", (), "no directory requests on object stores",
     "On S3, initialize_base_locations_for_checkpoint sends no directory request (HeadObject, "
     "HeadBucket, List) and initialize_location_for_checkpoint sends no request at all: object "
     "stores have no directories (decision, following S1; a once-per-job probe of the server's "
     "conditional writes is no directory request).",
     ("S1", "ACC5", "ACC6", "decision")),
    ("NOX-8", "MUST", (), "finalization never lists",
     "On S3, creating, writing and finalizing a metadata stream sends no HeadBucket request, no "
     "List request but of the keys that begin with the metadata file's own key (MD-13's "
     "claims, where the server ignores conditional writes), and HeadObject only on the "
     "metadata file itself (Flink MD2).",
     ("MD2", "S1")),
    ("NOX-9", "SHOULD", (), "resolving a pointer costs one request",
     "On S3, resolve_checkpoint of a completed checkpoint's external_pointer, of that pointer "
     "with a trailing '/', and of its metadata file each sends one request, a HeadObject or a "
     "GetObject of the metadata file (decision, beyond Flink PTR9's one or two status calls: "
     "the storage knows that _metadata lies in the directory, and on S3 a status call on a "
     "directory costs a HeadObject that finds nothing and a List).",
     ("PTR9", "S1", "decision")),
    ("NOX-10", "SHOULD", ("inline-state",), "a discarded stream that uploaded nothing is free",
     "On S3, creating a state stream (exclusive, shared, and a task-owned one) with an inline "
     "threshold of 0, writing 100 KiB to it (past the write buffer, below S3's 5 MiB minimum "
     "part size, so that nothing of it has to reach the store before it is finished) and "
     "discarding it with close() sends no request at all: no DeleteObject of an object that "
     "was never written, no AbortMultipartUpload of an upload that never began (decision, "
     "beyond Flink, whose state stream deletes on close() the file it created, S13: on S3 a "
     "DeleteObject per discarded stream, each counted against the bucket's request rates, "
     "seed 002).",
     ("S13", "seed 002", "decision")),
    # ------------------------------------------------------------------ TOW
    ("TOW-1", "MUST", (), "task-owned streams round-trip",
     "create_task_owned_state_stream() returns a state stream with the STR semantics: its handle "
     "reads back the bytes, and an empty stream gives None (seed 004).",
     ("seed 004", "ACC10")),
    ("TOW-2", "MUST", ("file-layout",), "task-owned state lies in taskowned/",
     "Task-owned state files lie directly in <job dir>/taskowned/ (Flink TO2, T-FSA3).",
     ("TO2", "T-FSA3", "L1")),
    ("TOW-3", "MUST", (), "coordinator disposal keeps task-owned state",
     "Task-owned state survives dispose_storage_location of completed checkpoints and "
     "dispose_on_failure of aborted ones (seed 004: 'not attached to the life cycle of a "
     "specific checkpoint'; Flink TO3).",
     ("seed 004", "TO1", "TO3")),
    ("TOW-4", "MUST", (), "tasks clean up their own state",
     "discard_state() of a task-owned handle removes its state from the backend (seed 004: 'the "
     "responsibility of the tasks to handle the cleanup').",
     ("seed 004", "TO1", "H2")),
    ("TOW-5", "MUST", (), "abandoned task-owned streams leave nothing",
     "A task-owned stream closed without taking a handle leaves no file (Flink S13).",
     ("S13", "seed 004")),
    ("TOW-6", "MUST", ("inline-state",), "threshold applies to task-owned state",
     "The inline threshold applies to task-owned streams: small state inline, larger state in a "
     "file (Flink TO2).",
     ("TO2", "ACC10")),
    ("TOW-7", "MUST", (), "duplication of what cannot be duplicated",
     "Toolsets and stream factories answer can_fast_duplicate() False for inline handles, and "
     "duplicate() of a handle they cannot duplicate raises ValueError or OSError (Flink T-TS1, "
     "TO4, TO5, S17).",
     ("seed 004", "TO4", "TO5", "S17", "T-TS1")),
    ("TOW-8", "MUST", ("fast-duplicate",), "fast duplication",
     "For a file handle from another location, can_fast_duplicate() is True and duplicate() "
     "returns, in order, handles of new files in the target location (task-owned for the "
     "toolset, the scope's directory for a factory) with the same bytes and sizes; a relative "
     "handle's copy is relative, with its new file's name as relative_path, and an absolute "
     "handle's copy absolute (no relative_path); the sources stay intact; on the local file "
     "system this holds also for handles on another device (a tmpfs such as /dev/shm, where "
     "the machine has a writable one), which no hard link reaches (Flink TO4, T-TS2, T-TS4).",
     ("TO4", "TO6", "S17", "T-TS2", "T-TS4")),
    ("TOW-9", "MUST", ("fast-duplicate",), "duplication is server-side",
     "On S3, duplicate() copies server-side: one CopyObject request per handle and nothing "
     "else, so no GetObject, no upload of the data, and no HeadObject or List, as the handles "
     "carry their sizes (Flink TO6: files are copied instead of re-uploaded; decision, beyond "
     "Flink, which leaves a copy's requests to its file system: a size or existence check per "
     "file doubles the requests of a restore in NO_CLAIM mode, pain point P1).",
     ("TO4", "TO6", "decision")),
    ("TOW-10", "MUST", ("fast-duplicate",), "a failed duplication leaves no copies",
     "duplicate() of three file handles from another location, whose last one's file was "
     "discarded (discard_state()), raises an OSError and leaves no new file anywhere below the "
     "test's root, for the toolset and for a factory of either scope: the copies it made of "
     "the first two are removed (decision: no handle refers to them, so nothing would ever "
     "delete them; task-owned state is the task's to clean, seed 004).",
     ("seed 004", "TO4", "decision")),
    # ------------------------------------------------------------------ SAV
    ("SAV-1", "MUST", ("savepoints",), "savepoint target matrix",
     "initialize_location_for_savepoint puts the savepoint in a new directory directly below the "
     "given target, which wins over the default savepoint directory, else below the default; "
     "a target at the root of the file system (memory:/// on the memory backend) holds the "
     "savepoint's directory directly below the root (seed 001; Flink ACC7, T-BASE5).",
     ("seed 001", "ACC7", "T-BASE5")),
    ("SAV-2", "MUST", ("savepoints",), "no savepoint location",
     "has_default_savepoint_location() tells whether a default savepoint directory is "
     "configured; with neither a target nor a default, initialize_location_for_savepoint raises "
     "ValueError (Flink ACC3, ACC7).",
     ("ACC3", "ACC7", "T-BASE5")),
    ("SAV-3", "MUST", ("savepoints",), "self-contained savepoints",
     "A savepoint's exclusive and shared state and its _metadata all lie in its one directory, "
     "and the savepoint restores from its pointer through a fresh storage (Flink ACC8, T-FSA1, "
     "T-FSA2; FLINK-5763).",
     ("ACC8", "T-FSA1", "T-FSA2", "H6")),
    ("SAV-4", "MUST", ("savepoints", "file-layout"), "savepoint directory names",
     "A savepoint directory is named savepoint-<first 6 characters of the job id>-<12 characters "
     "of [0-9a-f]> (seed 001: 'savepoint-jobId(0, 6)-randomDigits'; Flink L5).",
     ("seed 001", "L5")),
    ("SAV-5", "MUST", ("savepoints",), "distinct savepoints",
     "Savepoints of one job taken one after the other at the same target get distinct "
     "directories and do not overwrite each other (seed 001: entropy 'to avoid directory "
     "collisions').",
     ("seed 001", "ACC7")),
    ("SAV-6", "MUST", ("savepoints",), "workers write into savepoints",
     "resolve_checkpoint_storage_location(id, savepoint_location.location_reference) gives a "
     "worker a factory whose state restores with the savepoint (seed 004; Flink ACC9, REF4).",
     ("seed 004", "ACC9", "REF4")),
    ("SAV-7", "MUST", ("relocatable-savepoints",), "moved savepoints restore",
     "A savepoint directory moved as a whole (the original deleted) resolves at its new place, "
     "and its exclusive state handles, passed through the new location's resolve_handle, read "
     "the same bytes; where entropy-injection is claimed, on object stores (as LAY-8), the "
     "same holds for a savepoint taken to the default savepoint directory by a storage whose "
     "checkpoint path holds the entropy key as a whole segment and the savepoint directory "
     "does not (Flink H6, FLINK-5763; E6: only paths that hold the key get entropy, and only "
     "their exclusive handles are absolute).",
     ("H6", "P11", "E6")),
    ("SAV-8", "MUST", ("savepoints",), "a file is no savepoint target",
     "On file systems with directories, initialize_location_for_savepoint with a target that is "
     "an existing file, or lies below one, raises OSError, at initialization or at the latest "
     "when the savepoint's metadata is finalized, and leaves the file as it was (Flink ACC7: "
     "mkdirs fails, 'Failed to create savepoint directory').",
     ("ACC7",)),
    # ------------------------------------------------------------------ MD
    ("MD-1", "MUST", (), "metadata is never half-visible",
     "Before close_and_finalize_checkpoint() the checkpoint does not resolve "
     "(FileNotFoundError) and no file exists at the metadata's final path, also after flush() "
     "(decision following FLINK-17808, MD2; Flink's plain writer made it visible early, P7).",
     ("MD2", "T-MOS1", "P7", "decision")),
    ("MD-2", "MUST", (), "close without finalize leaves nothing",
     "close() on a metadata stream without finalizing, also repeated, leaves the stream "
     "`closed`, no file of that stream, and a checkpoint that does not resolve: "
     "FileNotFoundError (Flink MD5, T-MOS2).",
     ("MD5", "T-MOS2")),
    ("MD-3", "MUST", (), "no second metadata",
     "A second metadata stream for an already finalized checkpoint fails with OSError, at "
     "creation or at the latest at finalization, and the first _metadata stays unchanged, also "
     "on an object store whose server ignores conditional writes (If-None-Match removed by "
     "the request ledger of a second route to the backend, as s3rver, older MinIO and Ceph "
     "ignore it; on backends that accept any credentials, since the header is signed; with "
     "allow_unconditional_metadata, MD-13); and when two finalizations of one checkpoint race "
     "on object stores with a ledger whose server honours conditional writes (the "
     "first's PutObject of _metadata held by the server for 2 seconds while the second is "
     "sent, through a route the storage has not used before), exactly one returns, the other "
     "raises OSError, and _metadata holds the bytes of the one that returned (Flink "
     "MD2, T-BASE4).",
     ("MD2", "T-BASE4")),
    ("MD-4", "MUST", (), "finalization result",
     "close_and_finalize_checkpoint() returns a completed location whose external_pointer is a "
     "non-empty string and whose metadata_handle reads exactly the bytes written, with "
     "state_size their number or -1; tell() counted them, from 0 before the first write "
     "(Flink MD3, MD4).",
     ("MD3", "MD4")),
    ("MD-5", "MUST", (), "empty metadata",
     "A metadata stream with nothing written still finalizes into a resolvable checkpoint whose "
     "metadata has zero bytes: metadata has no inline threshold (Flink MD3, T-CSOS1).",
     ("MD3", "T-CSOS1")),
    ("MD-6", "MUST", (), "after finalization",
     "After close_and_finalize_checkpoint(), `closed` is true, write() and a second "
     "finalization raise OSError or ValueError, and close() (also repeated) is harmless and "
     "keeps the checkpoint (Flink MD4, MD5).",
     ("MD4", "MD5")),
    ("MD-7", "MUST", (), "resolve_handle",
     "A completed location's resolve_handle() returns handles that read the same bytes for the "
     "location's own handles, the job's shared and task-owned handles (a checkpoint references "
     "them too), inline handles and absolute file handles, and raises ValueError "
     "for a relative handle whose relative_path is not one file name inside the directory "
     "(contract: it never reads outside the checkpoint). This goes beyond Flink on purpose: "
     "Flink rebases any relative path unchecked (H5: new Path(exclusiveDir, relativePath)), so "
     "a '../' path in a crafted or damaged _metadata names a file outside the checkpoint, "
     "which a restore would read and a discard would delete.",
     ("H5", "H6", "decision")),
    ("MD-8", "MUST", (), "negative checkpoint ids",
     "initialize_location_for_checkpoint() with a negative id raises ValueError (Flink ACC6).",
     ("ACC6", "MEM3")),
    ("MD-9", "SHOULD", (), "a second metadata is a FileExistsError",
     "In MD-3's cases (a second metadata stream of the same location, and of a location "
     "initialized again for the same checkpoint id, and where the object store refuses the "
     "second exclusive create of _metadata with 412 PreconditionFailed or with 409 "
     "ConditionalRequestConflict, AWS's answer to conditional writes of one key at once; on a "
     "ledger), the error is a FileExistsError, Python's "
     "OSError subclass for something that exists already, so that a caller can tell 'this "
     "checkpoint was already finalized' from an I/O failure (decision, beyond Flink: Flink "
     "2.3.0 raises a plain IOException 'Target file ... already exists.', MD2).",
     ("MD2", "decision")),
    ("MD-10", "MUST", ("in-memory-checkpoints",), "checkpoints kept in memory",
     "On a storage made without a checkpoint directory (make_storage with checkpoint_dir=None), "
     "whose completed checkpoints Flink keeps in memory with the pointer "
     "'<checkpoint-not-externally-addressable>' (MEM3), "
     "the metadata stream and the completed location behave as MD-4, MD-6 and MD-7 say for "
     "the others: tell() counts the bytes from 0 and the metadata_handle reads them back; "
     "after finalization `closed` is true, write() and a second finalization raise OSError or "
     "ValueError and close() keeps the metadata_handle readable; close() without finalizing, "
     "also repeated, leaves the stream `closed`, and write() and close_and_finalize_checkpoint() "
     "then raise OSError or ValueError; resolve_handle() keeps the "
     "bytes of own, shared, task-owned and inline handles and raises ValueError for a "
     "relative handle whose relative_path is not one file name.",
     ("MEM3", "MD3", "MD4", "MD5", "H6")),
    ("MD-11", "MUST", (), "overlapping finalizations keep the first",
     "A second metadata stream made before the first finalizes (of the same location, or of "
     "one initialized again) and finalized after it fails with OSError, at creation or at the "
     "latest at finalization, and the first _metadata stays unchanged; and when 12 "
     "finalizations of one checkpoint race on any backend but a server that ignores "
     "conditional writes (MD-13) (threads started together, round "
     "after round, each with its own location initialized again), exactly one returns, the "
     "others raise OSError, and _metadata holds the bytes of the one that returned. This goes "
     "beyond Flink on purpose (decision): Flink 2.3.0 checks for an existing _metadata only "
     "when a stream is made, and on local disks commits it by an atomic rename, which replaces "
     "a _metadata another stream committed meanwhile, so both finalizations return and the "
     "checkpoint the first reported complete is silently replaced; Flink's own coordinator "
     "never finalizes one checkpoint twice, but two coordinators or a tool that share the "
     "storage can (Flink MD2, T-BASE4).",
     ("MD2", "T-BASE4", "decision")),
    ("MD-13", "MUST", (), "no silent loss without conditional writes",
     "On an object store whose server ignores conditional writes, finalizing without "
     "allow_unconditional_metadata raises OSError naming conditional writes and leaves no "
     "_metadata; with it, of 12 finalizations of one checkpoint racing, at most one returns, "
     "the others raise OSError, and _metadata holds its bytes (decision; Flink 2.3.0 checks, "
     "then writes: the later one replaces it, MD2).",
     ("MD2", "decision")),
    # ------------------------------------------------------------------ DIS
    ("DIS-1", "MUST", (), "aborted checkpoints are removed",
     "dispose_on_failure() of an in-progress location removes its exclusive state from the "
     "backend (where file-layout is claimed, its chk-<n> directory holds no file afterwards), "
     "and shared-scope state written for it survives; where savepoints is claimed, the same "
     "holds for a savepoint's location (its savepoint directory holds no file afterwards); on "
     "S3 all of this holds too for a checkpoint directory at the bucket's top level whose name "
     "starts with an 'X' or a space (Flink MD7, ACC12).",
     ("MD7", "ACC12")),
    ("DIS-2", "MUST", (), "completed checkpoints are removed",
     "dispose_storage_location() of a completed location, also one obtained from "
     "resolve_checkpoint on a fresh storage, removes the checkpoint's directory recursively "
     "(_metadata, exclusive state, anything else below it), also on S3 with a checkpoint "
     "directory at the bucket's top level whose name starts with an 'X' or a space, and the "
     "pointer no longer resolves: "
     "FileNotFoundError (Flink MD6, T-CCL1, FLINK-38909; Flink 2.3.0 still deletes "
     "non-recursively, a Flink bug that leaves chk-<n> directories behind, P4).",
     ("MD6", "T-CCL1", "P4")),
    ("DIS-3", "MUST", (), "disposal is confined",
     "Disposing one checkpoint (dispose_storage_location of a completed one, "
     "dispose_on_failure of an aborted one) never removes shared state, task-owned state or "
     "another checkpoint's data (Flink MD6, MD7, TO3).",
     ("MD6", "MD7", "TO3")),
    ("DIS-4", "MUST", (), "deleting what is gone is not an error",
     "discard_state() of a handle whose file is already gone, and a second dispose of a "
     "location, do not raise (Flink H2, FLINK-26450); on object stores with a request ledger "
     "whose server carries out every DeleteObjects and then reports each of its keys with an "
     "<Error> of code NoSuchKey (as S3-compatible servers report keys already gone), "
     "dispose_on_failure of a location in progress and dispose_storage_location of a "
     "completed checkpoint, each holding 2 exclusive state files, raise nothing and leave no "
     "object in the directories of those files and of the _metadata.",
     ("H2", "T-FSH4", "P8")),
    ("DIS-5", "MUST", (), "discard deletes only its own file",
     "discard_state() removes the handle's file only: other files in the same directory survive, "
     "and on file systems with directories the directory survives (Flink H2, T-FSH2).",
     ("H2", "H4", "T-FSH2", "T-SOS10")),
    ("DIS-6", "MUST", (), "removed state reads as missing",
     "A file-backed handle of exclusive state whose file was removed, by its discard_state() "
     "or by dispose_on_failure() of its location, raises FileNotFoundError when it is opened "
     "with open_input_stream() and read (a lazy reader may raise at the first read()); an "
     "inline handle still reads its bytes (Flink H1, H4: FileStateHandle.openInputStream on "
     "a deleted file raises FileNotFoundException; a restore must tell lost state from an I/O "
     "failure).",
     ("H1", "H4", "MD7")),
    # ------------------------------------------------------------------ MEM
    ("MEM-1", "MUST", ("memory-limit",), "state up to the maximum",
     "State of exactly max_state_size bytes is accepted and reads back (Flink MEM5: the check is "
     "size > max).",
     ("MEM5", "CS3")),
    ("MEM-2", "MUST", ("memory-limit",), "state above the maximum",
     "State of max_state_size + 1 bytes fails with OSError, at the latest at "
     "close_and_get_handle() (Flink MEM5; P10).",
     ("MEM5", "P10")),
    ("MEM-3", "MUST", ("memory-limit",), "limit applies to task-owned state",
     "The maximum applies to task-owned streams as well (Flink ACC10, memory variant).",
     ("ACC10", "MEM4")),
    ("MEM-4", "MUST", ("memory-limit",), "invalid maximum",
     "A max_state_size of 0 or less raises ValueError at make_storage or at the latest at first "
     "use (Flink CS3: 'maxStateSize must be > 0').",
     ("CS3", "MEM1")),
    ("MEM-5", "SHOULD", ("memory-limit",), "default maximum 5 MiB",
     "Without a configured maximum, 5 MiB of state is accepted and 5 MiB + 1 byte fails (Flink "
     "DEFAULT_MAX_STATE_SIZE, PyFlink).",
     ("CS3", "CC5")),
    # ------------------------------------------------------------------ BAD
    ("BAD-1", "MUST", (), "bad arguments raise TypeError or ValueError",
     "Every public method of the contract, called with one bad argument of the suite's corpus "
     "and every other argument valid, raises TypeError or ValueError (subclasses accepted) and "
     "no other exception (not AttributeError, KeyError, OSError or a client library's): job "
     "ids that are not JobIDs (None, numbers, bytes, strings that are not 32 hex digits); "
     "pointers and savepoint targets that are not strings (among them an object whose str() "
     "raises); ids given to "
     "initialize_location_for_checkpoint, initialize_location_for_savepoint (with and without "
     "a target) and resolve_checkpoint_storage_location that are not ints (None, 'x', '1', "
     "1.0, NaN, True, b'1', Decimal) or lie outside the Java long range (2**63, -2**63-1), and "
     "negative ids for initialize_location_for_checkpoint; location "
     "references that are not CheckpointStorageLocationReferences (None aside, which is "
     "BAD-3's: Flink's JobManager storage ignores the reference, ACC9); scopes that are neither "
     "CheckpointedStateScope members nor their values (and None as duplicate's scope); handles "
     "and handle lists that are not state handles (among them objects with the handle's "
     "methods whose state_size is not an int or whose file_path or relative_path is not a "
     "string, as a damaged _metadata may give), given to resolve_handle and to the "
     "can_fast_duplicate and duplicate of a stream factory and of the task-owned toolset "
     "(can_fast_duplicate may answer False instead, as Flink does; duplicate only where "
     "fast-duplicate is claimed: a caller duplicates only what can_fast_duplicate accepted, and "
     "a storage without it refuses every duplicate as unsupported before it looks at the "
     "arguments, TOW-7, as Flink does, TO5, S17); write() data that is not "
     "bytes, bytearray or memoryview, on state, task-owned and metadata streams; and a "
     "hypothesis sample of such values (decision: Java's types rule these out in Flink; the "
     "contract maps NullPointerException to TypeError and IllegalArgumentException to "
     "ValueError).",
     ("decision", "ACC6", "S17", "TO5")),
    ("BAD-2", "MUST", (), "None is a TypeError, ids out of range a ValueError",
     "In BAD-1's corpus, None as a job id, pointer, checkpoint or savepoint id, "
     "handle, handle list or write() data raises TypeError, and an id outside the "
     "Java long range (-2**63 .. 2**63-1), or a negative id given to "
     "initialize_location_for_checkpoint, raises ValueError (subclasses accepted; "
     "can_fast_duplicate may answer False instead) (Flink: NullPointerException, "
     "IllegalArgumentException, ACC6; ids are Java longs so that Flink can read what was "
     "written).",
     ("PTR2", "ACC6", "decision")),
    ("BAD-3", "SHOULD", (), "stricter argument checks than Flink's",
     "In BAD-1's corpus, an argument of the wrong type (a str, float, bool, bytes or Decimal as "
     "an id; bytes, a number, a list or another object as a job id, pointer, scope, reference, "
     "handle or write() data; a str as a reference, handle or data; strings given as a scope "
     "or a job id count as invalid values, not types) raises TypeError, not only ValueError "
     "(Python's convention; the contract also allows "
     "ValueError, Flink's IllegalArgumentException, and the reference raises an error that is "
     "both); a negative id given to initialize_location_for_savepoint or "
     "resolve_checkpoint_storage_location raises ValueError; and None as the scope of "
     "create_checkpoint_state_output_stream or can_fast_duplicate, or as the reference of "
     "resolve_checkpoint_storage_location, raises TypeError (Flink checks ids only in "
     "initializeLocationForCheckpoint, ACC6, ignores the savepoint id, ACC7, takes a null "
     "scope as shared, S3, and its JobManager storage ignores the reference, ACC9: this SHOULD "
     "goes beyond Flink).",
     ("ACC6", "ACC7", "ACC9", "S3", "decision")),
    ("BAD-12", "SHOULD", (), "errors name the bad argument",
     "In BAD-1's fixed corpus, the message of every error raised names the argument that was "
     "bad by its parameter name in ckptstore.api (job_id, external_pointer, checkpoint_id, "
     "external_location_pointer, reference, scope, handle, handles, data; a pointer or "
     "savepoint target may be called 'pointer' or 'target', a handles list 'handle'), compared "
     "without case, spaces and underscores, so 'jobId' and 'checkpoint id' count (decision, "
     "beyond Flink: an error for bad input says what was wrong, never only what broke deep "
     "inside; Flink's JobManagerCheckpointStorage raises a NullPointerException and an "
     "IllegalArgumentException without a message for a None job id and a negative checkpoint "
     "id).",
     ("decision",)),
    ("BAD-4", "MUST", (), "hostile pointers and references",
     "resolve_checkpoint of the storage and of an access, given the corpus's hostile pointers "
     "(empty, blank, NUL, newline and other control characters, lone surrogates that are not "
     "UTF-8, longer than 4096 characters, unknown schemes, texts shaped like credentials (a "
     "sig=... parameter, an Authorization header, a Bearer token, a quoted mapping holding a "
     "password, user:password@host), percent-encoded segments such as "
     "'%2e%2e' and '%2f', and '.', '..' and empty segments below the test's root, plus a "
     "hypothesis sample of such segments appended to a checkpoint's pointer), raises "
     "TypeError, ValueError or OSError (FileNotFoundError included) or resolves, and raises "
     "no other exception. A pointer whose '.', '..' and empty segments, normalised as Flink's "
     "Path does, name a checkpoint's directory or metadata file resolves, if it resolves, to "
     "that checkpoint (its metadata bytes) with an external_pointer that has no '.' or '..' "
     "segment; every other pointer of the corpus, among them one whose '%2e%2e' segment would "
     "lead to a checkpoint if it were decoded and, for a checkpoint on the local file system, "
     "the file URL whose host spells its path's first directory (file://tmp/x for /tmp/x, "
     "which Flink refuses: 'Found local file path with authority'), does not resolve; "
     "pointers whose '..' segments climb above the test's root need only a typed outcome. "
     "On an object store with a request ledger, a checkpoint's pointer with '.' or '..' put "
     "before its bucket (s3://./<bucket>/..., s3://../<bucket>/...) raises TypeError, "
     "ValueError or OSError before any request reaches the server (decision: neither is a "
     "bucket name, and a request for one reaches the real bucket once an HTTP layer "
     "normalises its path). "
     "resolve_checkpoint_storage_location given location references whose bytes are no usable "
     "path reference (one byte, shorter than the magic number, which ckptstore.api's "
     "CheckpointStorageLocationReference can be made of as Flink's takes any non-empty array; "
     "no magic number, not UTF-8, NUL, '/..', an unknown scheme, 5000 characters) raises "
     "TypeError, ValueError or OSError or returns (Flink's JobManager storage ignores "
     "references). (Flink's Path normalises '.', '..' and '//' and keeps '%' literal; PTR1, "
     "PTR3, PTR4, ACC9, REF1, REF3.)",
     ("PTR1", "PTR3", "PTR4", "PTR8", "ACC9", "REF1", "REF3")),
    ("BAD-5", "MUST", ("savepoints",), "hostile savepoint targets",
     "initialize_location_for_savepoint with a target that is empty or blank, contains NUL, "
     "is longer than 4096 characters or has an unknown scheme raises TypeError, ValueError or "
     "OSError, at initialization or at the latest when the savepoint's metadata is finalized, "
     "and no other exception; with a target below the test's root whose '.' and '..' segments "
     "stay below it, it either raises one of these or puts the savepoint directly below the "
     "normalised target, with an external_pointer that has no '.' or '..' segment, and creates "
     "no directory that the target only passes through (Flink's Path normalises the target "
     "before mkdirs, ACC7). Refusing a blank target goes beyond Flink on purpose: Flink's Path "
     "rejects the empty string but takes ' ' or a tab as a relative path, a whitespace-named "
     "directory in the working directory of the process, where nobody looks for the savepoint "
     "(a blank target is an unset or mis-quoted setting, never a place).",
     ("ACC7", "PTR1", "L5")),
    ("BAD-6", "MUST", (), "bad input changes nothing",
     "After BAD-1's and BAD-2's fixed corpus (the calls every storage must refuse, among them, "
     "where fast-duplicate is claimed, duplicate() of a list whose first handle is valid and "
     "whose second is not, and "
     "initialize_location_for_savepoint with a bad id and a target below the test's root) and "
     "BAD-4's hostile pointers and references, a raw listing of the test's root and of the "
     "working directory, with every file's size and SHA-256, is the same as before; and the "
     "same storage, access, open location and stream factory then still write exclusive, "
     "shared and task-owned state, finalize, resolve (also through a fresh storage), read "
     "every byte back and dispose (decision: arguments are checked before anything is "
     "written).",
     ("decision", "S17")),
    ("BAD-7", "SHOULD", ("file-layout",), "disposal deletes only checkpoint directories",
     "A location resolved from a pointer that names no chk-<n> or savepoint directory (a "
     "directory with a _metadata file but another name, its _metadata or another file in it, "
     "the same reached by '..' from a checkpoint, a file in the job or checkpoint base "
     "directory, the job and base directories themselves, a shared or task-owned state file) "
     "either does not resolve or, when disposed with dispose_storage_location, deletes and "
     "changes nothing outside chk-<n> and savepoint-<job>-<suffix> directories (compared in a "
     "raw listing of the test's root with every file's size and SHA-256); and where savepoints "
     "is claimed, dispose_on_failure of a savepoint located below an existing directory "
     "deletes nothing outside them that existed before (decision; Flink resolves any file as "
     "metadata, PTR7, and "
     "since FLINK-38909 deletes its parent directory recursively, MD6, so Flink does not meet "
     "this).",
     ("PTR7", "MD6", "decision")),
    ("BAD-8", "MUST", ("redacts-secrets",), "secrets are never shown",
     "On object-store backends, with storage_options holding secrets (an endpoint URL with "
     "user:password@ userinfo, the password holding an apostrophe as RFC 3986 allows, on "
     "127.0.0.1 at a port that refuses connections, config_kwargs' proxies for http and "
     "https at another such port with user:password@ userinfo, a secret key and "
     "client_kwargs' aws_session_token; then, with the same secrets, an endpoint URL on such a "
     "port whose query string carries an X-Amz-Security-Token and a sig parameter, the shape "
     "of presigned and SAS URLs, which botocore refuses by quoting it; then unsigned requests "
     "(s3fs's anon) to an endpoint URL on such a port whose userinfo password is four "
     "characters holding an apostrophe, which the client's connection error quotes whole, "
     "so that only the configured value finds it, then one whose password is a digit, an "
     "apostrophe, the session token and a tail, so that blanking the token first would leave "
     "the tail (no part of a password that holds another secret may show); retry_attempts 1 "
     "and "
     "retry_seconds 5 where retry-budget is claimed; "
     "steps still running after 20 seconds are abandoned unchecked), repr() and str() of the "
     "storage, its "
     "access, locations, stream factories, streams, handles, the task-owned toolset and "
     "completed locations (which return text, never raise), str() and repr() of every error "
     "their methods raise, with its "
     "causes and contexts, and every log record of the implementation's own loggers (named "
     "under the top-level package of the target's or the storage's class, at every level, "
     "as formatted) contain none of these secrets; on object-store backends that "
     "accept any credentials the same holds for a storage that reaches the store with a "
     "secret key and session token (state written, finalized, resolved, read, disposed), and "
     "elsewhere for the backend's own secret; on object-store backends with a request "
     "ledger that accept any credentials, with a secret key and session token in the "
     "storage_options, finalizing a checkpoint whose _metadata PutObject commits but loses "
     "its answer (REQ-4), disposing it while ListMultipartUploads is answered 501 (REQ-11) "
     "and finalizing one through a second route to the server that ignores conditional "
     "writes each succeed, and every record of the implementation's own loggers meanwhile "
     "(at every level; the suite demands none) gives its text from getMessage() without "
     "raising and shows neither secret; on every backend, with the backend's own "
     "settings (the sftp leg's password, beside an option holding a mapping of a tuple and a "
     "list), the same reprs, errors and log records are text and show none of the backend's "
     "secrets (decision; the contract's untrusted-input rules).",
     ("decision",)),
    ("BAD-9", "MUST", ("retry-budget",), "invalid retry budgets are refused, valid ones kept",
     "A retry_attempts of 0 or -1 and a retry_seconds of 0, -1, NaN or infinity raise "
     "ValueError; a retry_attempts of True, 2.5 or '3' and a retry_seconds of True or '5' raise "
     "TypeError or ValueError (subclasses accepted); each when the storage is made, or at the "
     "latest when the job's access is created and a first stream of state is closed, on every "
     "backend; a valid budget (retry_attempts 2, retry_seconds 30) is accepted on every "
     "backend, also where the store is no object store: with it, 3000 bytes of state (in a "
     "file where inline-state is claimed) read back and a checkpoint finalizes "
     "(decision: a budget that allows no request, no time or unbounded time is a "
     "misconfiguration, refused as INL-7 and MEM-4 refuse theirs; the options catalog gives "
     "the ranges).",
     ("decision",)),
    ("BAD-10", "MUST", (), "an unreachable store fails fast, typed and named",
     "On backends that reach a server, with storage_options that name 127.0.0.1 at a port "
     "that refuses connections (an object store's endpoint_url; an SFTP server's port, which "
     "the checkpoint and savepoint URLs then name too): closing a stream of 3000 bytes of "
     "state (where "
     "inline-state or file-layout is claimed; with an inline threshold of 1024 where "
     "inline-state is) and, on object stores with s3fs's default_block_size of 5 MiB in the "
     "storage_options, a stream of 12 MiB (a multipart upload begins while it is written), "
     "finalizing a checkpoint's "
     "_metadata and resolve_checkpoint of a pointer below the test's root each raise an "
     "OSError within 15 seconds whose message names the endpoint's host and port; the same "
     "holds for an object store's endpoint_url at the IPv6 loopback, http://[::1]:<port> with "
     "nothing bound there (the steps fail the same way where the machine has no IPv6 "
     "loopback), whose message names it as [::1]:<port> wherever it names the port, with the "
     "brackets a URL gives an IPv6 host (a bare '::1:<port>' reads as another address); and "
     "for an S3 endpoint given only by botocore's AWS_ENDPOINT_URL_S3, http://127.0.0.1:<port>, "
     "with storage_options that name no endpoint (neither endpoint_url nor client_kwargs' "
     "endpoint_url; a key and secret of their own), whose message names 127.0.0.1:<port>; the "
     "steps "
     "before them (make_storage, creating the access, initializing the base locations and "
     "the checkpoint's location, creating streams, writing, close()) either succeed or fail "
     "the same way, and a failed base initialization does not stop the checkpoint's location "
     "from being used (decision; SPK-6 on the coordinator; Flink's IOException naming the "
     "host).",
     ("decision",)),
    ("BAD-11", "SHOULD", (), "an unreachable store is a ConnectionError",
     "In BAD-10's steps, an error caused by the refused connection is a ConnectionError "
     "(Python's OSError subclass for a connection that could not be made; Flink's "
     "java.net.ConnectException); so is every error of the same steps on object stores "
     "through an endpoint_url whose host does not resolve, http://ckptconform.invalid:9000 "
     "(RFC 2606 reserves .invalid), where the steps that need the store each raise an OSError "
     "within 15 seconds whose message names ckptconform.invalid:9000 and the others either "
     "succeed or fail the same way, as in BAD-10; so that callers can tell an unreachable "
     "store from a missing or unreadable object (decision).",
     ("decision",)),
    ("BAD-13", "SHOULD", (), "server errors name the endpoint",
     "On backends with a request ledger, with the endpoint given as s3fs's endpoint_url or "
     "as its client_kwargs' endpoint_url, while the server answers every request 403 "
     "AccessDenied: closing a stream of 3000 bytes of state (where inline-state or file-layout "
     "is claimed; with an inline threshold of 1024 where inline-state is), finalizing a "
     "checkpoint's _metadata, reading a file-backed handle written before and "
     "resolve_checkpoint of a checkpoint completed before each raise an OSError within 15 "
     "seconds whose message names the endpoint's host and port; creating the streams, "
     "writing, close(), reading an inline handle, duplicating a file-backed handle written "
     "before (where fast-duplicate is claimed), discarding it, dispose_on_failure of the "
     "checkpoint's location and dispose_storage_location of the completed checkpoint either "
     "succeed or fail the same way; and on every backend that reaches a server (an "
     "endpoint_url, or an SFTP server's host and port), in BAD-15's steps that create "
     "directories or files, every OSError other than a FileNotFoundError names the server's "
     "host and port, the path past the server's limits being its refusal "
     "(decision, as BAD-10 for a refused connection: S3's and SFTP's error texts name no "
     "endpoint, and an operator whose storage reaches several needs to know which one "
     "refused).",
     ("decision",)),
    ("BAD-14", "SHOULD", (), "errno and class agree",
     "Every OSError the storage raises carries an errno, one that Python's OSError(errno, "
     "text) maps to the error's own built-in class (the first in its MRO; for a "
     "ConnectionError, which no errno maps to, ECONNREFUSED, ECONNRESET, ECONNABORTED, EPIPE, "
     "ETIMEDOUT, EHOSTUNREACH or ENETUNREACH): reading a file-backed handle whose file was "
     "discarded raises FileNotFoundError with errno ENOENT on every backend; so does every "
     "OSError that resolve_checkpoint raises for BAD-4's fixed hostile pointers and for a "
     "checkpoint directory that does not exist (the storage's own refusals included); on file "
     "systems with directories, a savepoint target that is an existing file or lies below "
     "one (SAV-8's cases) raises OSErrors whose errno agrees so too (ENOTDIR only on a "
     "NotADirectoryError); through an "
     "endpoint that refuses connections (BAD-10's steps) every OSError carries errno "
     "ECONNREFUSED; while the server answers every request 403 AccessDenied (BAD-13's steps) "
     "no error is a ConnectionError or has one of those connection errnos (decision, beyond "
     "Flink: Python's convention, where OSError's constructor picks the subclass from the "
     "errno and callers branch on either, so that retry logic tells a missing object, an "
     "unreachable store and a refused request apart; Flink's Java exceptions carry their "
     "class only).",
     ("decision",)),
    ("BAD-15", "MUST", (), "paths past the file system's limit fail typed",
     "On every backend, with a checkpoint directory that is also the default savepoint "
     "directory, below the test's root, whose URL is 4030 or 4075 characters long (segments "
     "of at most 200 characters), so that the paths made below it pass the local file "
     "system's limit of 4096 bytes (Linux's PATH_MAX) at the state files and _metadata, or "
     "already at the job's directories (and an object store's keys pass S3's limit of 1024 "
     "bytes): make_storage with create_checkpoint_storage, initializing the base "
     "locations and checkpoint 1's location, closing a stream of 3000 bytes of its state, "
     "finalizing its _metadata, a savepoint at the default directory and resolve_checkpoint "
     "of <checkpoint directory>/<job id>/chk-1 each either succeed or raise OSError or "
     "ValueError, and nothing else; a storage that refuses the directory at make_storage "
     "meets this (decision: a path the store cannot hold is the store's refusal or bad "
     "input, never a crash inside the storage; Flink's IOException).",
     ("decision",)),
    ("BAD-16", "SHOULD", (), "the file system's errno is kept",
     "On the local file system, in BAD-15's steps that create directories or files (all "
     "but make_storage and resolve_checkpoint), every OSError other than a "
     "FileNotFoundError carries errno ENAMETOOLONG, the errno of the file system's own "
     "refusal, which Python's OSError maps to no subclass (decision, beyond Flink: a "
     "storage that wraps a file system's failure keeps its errno where BAD-14 allows, so "
     "that callers tell a name too long from a full disk, ENOSPC, or a denied access, "
     "EACCES, without parsing messages; Flink's Java exceptions carry their class only).",
     ("decision",)),
    # ------------------------------------------------------------------ SPK
    ("SPK-1", "MUST", (), "storages ship to executors",
     "A storage pickled on the coordinator and unpickled by tasks in other processes (Spark "
     "executors' Python workers, every task in a fresh one) creates its access for the job, "
     "resolves the checkpoint's location from its location reference with "
     "resolve_checkpoint_storage_location, and writes exclusive and shared state (and "
     "task-owned state where task-owned-state is claimed) from several threads per task; every "
     "handle the tasks return reads exactly the bytes written when the coordinator reads it "
     "(seed 000: storages are distributed across parallel processes; seed 003: several threads "
     "create streams concurrently).",
     ("seed 000", "seed 003", "CS1")),
    ("SPK-2", "MUST", (), "concurrent tasks never share a file",
     "File-backed handles returned by concurrent tasks in different processes name distinct "
     "files, and no handle reads another stream's bytes: state file names are unique across "
     "processes, not only across the threads of one (Flink names state files with random "
     "UUIDs).",
     ("seed 003", "L3", "S11")),
    ("SPK-3", "MUST", (), "checkpoints complete and restore across processes",
     "Checkpoints whose state tasks on executors wrote complete on the coordinator (_metadata "
     "holds the pickled handles), several in a row, later ones still referencing shared state "
     "of earlier ones; after the earlier checkpoints' locations are disposed, a fresh storage "
     "resolves the latest pointer, and tasks on executors that receive only the handles taken "
     "out of _metadata (their process configured with a storage of the same configuration) "
     "read every byte as written.",
     ("seed 000", "MD6", "MD7")),
    ("SPK-4", "MUST", (), "handles use the reader's configuration",
     "On object stores, a handle read in a process where a storage for its scheme and bucket "
     "was unpickled reaches the store with that storage's configuration, also when it differs "
     "from the writer's (another endpoint route to the same store; other credentials where the "
     "server accepts any): every read goes through the reader's endpoint, signed with the "
     "reader's key, never with configuration carried over from the writer's process or a "
     "scheme default; in a Spark executor and in a plain fresh process alike, where the "
     "completed location's disposal goes through the reader's endpoint too (decision: "
     "handles read elsewhere, ARCHITECTURE section 3).",
     ("decision",)),
    ("SPK-5", "MUST", (), "handles use the process-wide configuration",
     "On object stores, a handle read in a process where no storage was unpickled (a Spark "
     "executor, and a plain fresh process alike, where the completed location's metadata "
     "handle reads too) reaches the store through the scheme's process-wide configuration "
     "(ckptstore.api's third rule for handles read elsewhere): the suite sets fsspec's "
     "FSSPEC_<SCHEME>_<OPTION> variables (endpoint_url, key, secret) and, for S3, "
     "AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, all naming one route "
     "to the backend's server, and every read goes through that route. On S3, in the "
     "coordinator's process, storages whose storage_options name no endpoint (neither "
     "endpoint_url nor client_kwargs' endpoint_url; keys only, a key and secret of their own "
     "where the server accepts any) take botocore's AWS_ENDPOINT_URL_S3, set to a route to "
     "the backend's server: one writes 3000 bytes of state and finalizes a checkpoint whose "
     "_metadata holds the pickled handle, a second one resolves the pointer and the handle "
     "taken out of _metadata reads the bytes back, and every request, at least one "
     "GetObject among them, goes through that route (decision, following fsspec's "
     "convention for any URL, and botocore's for any S3 client).",
     ("decision",)),
    ("SPK-6", "MUST", (), "unreachable endpoints fail fast, typed, without secrets",
     "On object stores, a handle read in a process whose storage for its bucket names an "
     "endpoint that refuses connections fails within 15 seconds with an OSError whose message "
     "names that endpoint (host and port) and does not contain the storage's secret (decision; "
     "Flink's IOException).",
     ("decision",)),
    ("SPK-7", "MUST", (), "aborted checkpoints leave nothing",
     "When the coordinator aborts a checkpoint that tasks on executors wrote state into, "
     "dispose_on_failure removes the exclusive state those tasks wrote (files the coordinator's "
     "process never saw), and discarding the shared and task-owned handles they returned "
     "removes those files: no file of the aborted checkpoint remains (DIS-1 across processes).",
     ("ACC12", "MD7")),
    ("SPK-8", "MUST", ("savepoints",), "savepoints written on executors restore",
     "Tasks on executors resolve a savepoint location from its location reference and write "
     "state into it; the coordinator finalizes the savepoint, a fresh storage resolves its "
     "pointer and tasks on executors read every handle of its _metadata as written; where "
     "relocatable-savepoints is claimed, also after the savepoint directory was moved and the "
     "handles of its exclusive state were rebased with resolve_handle on the coordinator.",
     ("seed 001", "ACC8", "L5")),
    ("SPK-9", "MUST", (), "request counts hold on executors",
     "Counted at the server while tasks on executors run: the worker path (unpickling the "
     "storage, resolving the location, writing every stream) sends no HeadObject, HeadBucket "
     "or List request; where inline-state is claimed, inline state sends nothing and each "
     "file-backed state below the multipart size is one PutObject and nothing else is sent; "
     "restoring tasks read handles without HeadObject or List requests (NOX-1, NOX-3 and NOX-4 "
     "on executors).",
     ("S1", "seed 002")),
    # ------------------------------------------------------------------ REQ
    ("REQ-1", "MUST", (), "coordinator requests do not grow with the task count",
     "On an object store with a request ledger, initializing a checkpoint's location and "
     "writing and finalizing its _metadata sends the same number of requests, at most 4, "
     "whether 2 or 12 tasks wrote state into the checkpoint, also through a route to a server "
     "that ignores conditional writes (If-None-Match removed), once the storage has set up its "
     "base locations there (decision; AWS's per-prefix request "
     "rates make per-task coordinator requests a scaling limit).",
     ("decision", "S1")),
    ("REQ-2", "MUST", (), "restores read each file once",
     "Tasks that read every handle of a finalized checkpoint (each below 5 MiB) send only "
     "GetObject requests, one per file-backed handle: no HeadObject, no List; so does a read "
     "of the metadata_handle of a completed or a resolved checkpoint whose _metadata is empty, "
     "which reads zero bytes with at most one GetObject, as the handle knows its size, also a "
     "size of 0 (decision; pain point P1: existence checks before reads).",
     ("decision", "S1")),
    ("REQ-3", "MUST", (), "throttled checkpoints complete",
     "When the server throttles PutObject per key prefix as S3 does (503 SlowDown with S3's "
     "own body beyond 10 requests per second, bursts of 2), a checkpoint of 8 tasks completes "
     "and restores byte for byte, and so does the next checkpoint when the PutObject of its "
     "_metadata is answered SlowDown three times in a row: throttling is retried with backoff, "
     "never a failure by itself, and a prefix throttled for a second or two needs more "
     "attempts than a transient fault does (FLINK-40387: SlowDown storms during large "
     "checkpoints; S3A counts throttling retries apart from other retries for this reason). "
     "It is retried within bounds: while every PutObject of a state file is answered SlowDown "
     "without end, closing a stream of 8192 bytes fails with an OSError within 30 seconds "
     "instead of holding the checkpoint (S3A's fs.s3a.retry.throttle.limit bounds its "
     "throttling retries likewise).",
     ("decision",)),
    ("REQ-4", "MUST", (), "a lost answer after commit never fails a checkpoint",
     "When the server carries out a PutObject and its answer is lost (the connection drops "
     "after the commit), for state files and for _metadata, the checkpoint still completes, "
     "its pointer resolves and every handle reads its bytes: a storage that retries a "
     "conditional write and finds the object there checks that it is its own (decision; "
     "FLINK-9325, FLINK-17808).",
     ("decision", "MD2")),
    ("REQ-5", "MUST", (), "faults never lose or expose data",
     "With 10% of PutObject and GetObject requests failing (500 InternalError, 503 SlowDown, "
     "dropped connections, before and after the commit), every checkpoint either completes "
     "and restores byte for byte, or fails with an OSError and, after dispose_on_failure, "
     "leaves no object of its exclusive state; a finalized _metadata never points at missing or "
     "partial state (decision; FLINK-9325, FLINK-17808).",
     ("decision", "MD7")),
    ("REQ-6", "MUST", ("retry-budget",), "an operation keeps to its retry budget",
     "With retry_attempts A and retry_seconds S (A=3, S=9.5, a float as the options catalog "
     "allows; and A=2, S=4.0): while every PutObject of a state file is answered 500 "
     "InternalError, closing a file-backed stream fails with an OSError within S + 5 seconds "
     "after exactly A PutObject requests for that file (the budget is spent, not exceeded), "
     "and so it does with A=2, S=4.0 while every PutObject is answered 503 SlowDown "
     "(throttling spends the budget the user set), and with A=2 alone (no retry_seconds) "
     "within 30 seconds; while only its first A - 1 PutObjects are answered 500, the close "
     "returns a handle that reads the bytes written; and with A=2, S=4.0, and with S=4.0 "
     "alone, while the server hangs on every PutObject "
     "(no answer for 60 seconds), the close fails with an OSError within S + 5 seconds; "
     "with A=2, S=4.0, and with S=4.0 alone, while every GetObject's answer stops after the "
     "first byte of its body (no more bytes for 60 seconds), reading a file-backed handle "
     "fails with an OSError within S + 5 seconds (the budget covers a transfer, not only its "
     "request); "
     "with neither key, a budget set in the client's own settings holds as well: with "
     "config_kwargs retries {max_attempts: 0} (botocore's count of retries after the first "
     "request) a PutObject answered 500 every time is sent once per file, with "
     "{total_max_attempts: 2} (its count of requests) twice, and so with AWS_MAX_ATTEMPTS=2 "
     "in the environment when the storage is made (botocore reads it when it makes a "
     "client), but once with both max_attempts 0 and AWS_MAX_ATTEMPTS=2 (botocore's "
     "precedence: its config over the environment); with AWS_RETRY_MODE=standard alone, a "
     "PutObject answered 503 SlowDown every time is sent three times per file (that mode's "
     "own limit); s3fs's own retries 4 (its loop repeats a call that failed on its "
     "connection) do not multiply retry_attempts 2: while the server drops every PutObject's "
     "connection, at most four PutObjects per file (two attempts, each of which the HTTP "
     "client may send again once on a new connection, as aiohttp does for idempotent "
     "requests); the storage_options given are left unmodified "
     "(decision: a bounded retry budget the storage exposes as configuration, as S3A's "
     "fs.s3a.attempts.maximum and fs.s3a.connection.request.timeout).",
     ("decision",)),
    ("REQ-7", "MUST", (), "disposal aborts open multipart uploads",
     "On an object store, dispose_on_failure of a checkpoint location aborts the multipart "
     "uploads still open below it (a writer that crashed mid-upload): none is left, as none "
     "of their parts would ever be deleted otherwise, and aborts none beside it: uploads open "
     "below chk-<n>0 and chk-<n>-x, whose names start like the location's, stay open (another "
     "checkpoint's writer may still be sending them) (decision).",
     ("decision", "MD7")),
    ("REQ-8", "MUST", ("inline-state",), "a delete reports what happened",
     "On an object store with a request ledger, while every DeleteObject of a state file is "
     "answered 500 InternalError (retry_attempts 1 and retry_seconds 5 where retry-budget is "
     "claimed), discard_state() of its handle raises an OSError within 30 seconds and the "
     "state still reads its bytes, also while every HeadObject of the file is answered so too "
     "(a storage that cannot tell the file is gone does not report it gone); while every "
     "DeleteObject of it is carried out and its "
     "answer lost (the connection drops after the delete), discard_state() returns within 30 "
     "seconds and the file is gone (Flink H2, FLINK-26450: a failed delete asks whether the "
     "file is gone, IOException if it is still there).",
     ("H2", "decision")),
    ("REQ-9", "MUST", ("inline-state",), "disposal reads every page of a listing",
     "On an object store with a request ledger that answers listings two entries at a time "
     "(ListObjectsV2, ListObjects and ListMultipartUploads; S3 pages them at 1000 entries and "
     "may return fewer than asked), dispose_on_failure of a checkpoint location holding 5 "
     "exclusive state files and 4 multipart uploads left open beside them (two of one key, "
     "as a CreateMultipartUpload sent again after its answer was lost leaves them, with a "
     "page ending between the two), and "
     "dispose_storage_location of a completed checkpoint holding 5 exclusive state files, "
     "leave no object and no open upload in the directories of those files and of its "
     "_metadata (decision: DIS-1, DIS-2 and REQ-7 for checkpoints of more than one page; "
     "Flink's recursive delete lists every page).",
     ("MD6", "MD7", "decision")),
    ("REQ-10", "MUST", ("inline-state",), "disposal reports what it could not delete",
     "On an object store with a request ledger, while the server refuses every deletion "
     "(DeleteObject answered 403 AccessDenied; DeleteObjects answered 200 with an AccessDenied "
     "<Error> for each key, as S3 reports objects it did not delete; retry_attempts 1 and "
     "retry_seconds 5 where retry-budget is claimed), dispose_on_failure of a checkpoint "
     "location and dispose_storage_location of a completed checkpoint, each holding 3 "
     "exclusive state files, each raise an OSError within 30 seconds, and every state file "
     "still reads its bytes (decision, as REQ-8 for one file: Flink's FileSystem.delete "
     "throws an IOException, S3A's a MultiObjectDeleteException, never a silent success).",
     ("MD6", "MD7", "decision")),
    ("REQ-11", "MUST", ("inline-state",), "disposal without multipart listings",
     "On an object store with a request ledger that answers every ListMultipartUploads with "
     "501 NotImplemented, again with 405 MethodNotAllowed, and again with a 501 without a "
     "body (no error code, only the status; S3-compatible servers without "
     "that listing answer so), dispose_on_failure of a checkpoint location and "
     "dispose_storage_location of a completed checkpoint, each holding 3 exclusive state "
     "files, raise nothing and delete every object in the directories of those files and "
     "of the _metadata (decision: the open uploads cannot be found there, and failing the disposal "
     "would leave every state file behind; Flink's disposal never lists uploads).",
     ("MD6", "MD7", "decision")),
    ("REQ-12", "MUST", (), "a dropped connection is an OSError",
     "On backends whose server can drop a client's connection mid-request (the sftp leg): "
     "when the server drops it instead of answering the OPEN, a READ or the CLOSE of a "
     "file-backed state's file, opening and reading the handle raise an OSError within 15 "
     "seconds that names the server's host and port (for the CLOSE: the read returns the "
     "state's bytes or raises such an OSError), and the next read of the handle from the "
     "same thread returns its bytes within 15 seconds: the storage connects anew "
     "(decision: servers drop idle and overloaded connections, and a task thread that read "
     "once through a dropped connection must not fail every later read).",
     ("decision",)),
]
# fmt: on


def _build() -> dict[str, Clause]:
    clauses: dict[str, Clause] = {}
    for cid, level, caps, title, text, spec in _RAW:
        group = cid.split("-", 1)[0]
        if cid in clauses:
            raise ValueError(f"duplicate clause id {cid}")
        if group not in GROUPS or group in RESERVED_GROUPS:
            raise ValueError(f"clause {cid}: unknown or reserved group {group}")
        if level not in ("MUST", "SHOULD"):
            raise ValueError(f"clause {cid}: level must be MUST or SHOULD, got {level}")
        unknown = set(caps) - set(CAPABILITIES)
        if unknown:
            raise ValueError(f"clause {cid}: unknown capabilities {sorted(unknown)}")
        clauses[cid] = Clause(cid, group, level, caps, title, text, spec)  # type: ignore[arg-type]
    return clauses


#: Every clause by id, in catalog order (grouped as in GROUPS).
CLAUSES: dict[str, Clause] = _build()


def clauses_of(group: str) -> list[Clause]:
    """The clauses of one group, in catalog order (empty for reserved groups)."""
    return [c for c in CLAUSES.values() if c.group == group]
