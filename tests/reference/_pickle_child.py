"""Child process of ``test_pickling``: use a storage that arrived pickled, as a worker would.

Run as a script (``python _pickle_child.py STORAGE_FILE SERIALIZER JOB_HEX CHECKPOINT_ID``);
it imports only ``ckptstore``, the standard library and (when asked) cloudpickle, so what
works here works in any fresh interpreter. It unpickles the storage, creates the job's
access, prepares the checkpoint location (coordinator side), writes exclusive, shared and
task-owned state below and above the inline threshold through the worker-side location,
publishes ``_metadata`` holding the pickled handles, and prints one JSON line:
``{"pointer": ..., "handles": <base64 of the pickled handle list>, "pid": ...}``.

The parent imports ``SPECS`` and ``payload`` from here to know what to expect.
"""

from __future__ import annotations

import base64
import json
import os
import random
import sys
from typing import Any

#: (kind, size) of each piece of state, in order; 100 B stays inline, 30000 B is a file.
SPECS: tuple[tuple[str, int], ...] = (
    ("exclusive", 100),
    ("exclusive", 30000),
    ("shared", 100),
    ("shared", 30000),
    ("task-owned", 100),
    ("task-owned", 30000),
)


def payload(index: int, size: int) -> bytes:
    """The deterministic bytes of piece ``index`` (the parent recomputes them)."""
    return random.Random(1000 + index).randbytes(size)


def serializer(name: str) -> Any:
    if name == "cloudpickle":
        import cloudpickle

        return cloudpickle
    import pickle

    return pickle


def main(argv: list[str]) -> int:
    storage_file, serializer_name, job_hex, checkpoint_text = argv
    codec = serializer(serializer_name)

    from ckptstore.api import CheckpointedStateScope, CheckpointStorageLocationReference, JobID

    with open(storage_file, "rb") as source:
        storage = codec.loads(source.read())
    checkpoint_id = int(checkpoint_text)
    access = storage.create_checkpoint_storage(JobID.from_hex(job_hex))
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(checkpoint_id)
    worker = access.resolve_checkpoint_storage_location(
        checkpoint_id, CheckpointStorageLocationReference.default()
    )

    handles = []
    for index, (kind, size) in enumerate(SPECS):
        if kind == "task-owned":
            stream = access.create_task_owned_state_stream()
        else:
            scope = (
                CheckpointedStateScope.EXCLUSIVE
                if kind == "exclusive"
                else (CheckpointedStateScope.SHARED)
            )
            stream = worker.create_checkpoint_state_output_stream(scope)
        data = payload(index, size)
        for start in range(0, size, 7000):
            stream.write(data[start : start + 7000])
        handles.append(stream.close_and_get_handle())

    blob = codec.dumps(handles)
    with location.create_metadata_output_stream() as out:
        out.write(blob)
        completed = out.close_and_finalize_checkpoint()
    print(
        json.dumps(
            {
                "pointer": completed.external_pointer,
                "handles": base64.b64encode(blob).decode("ascii"),
                "pid": os.getpid(),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
