"""ckptstore: the reference checkpoint storage (Flink's contract, in Python, on fsspec).

Importing ``ckptstore`` is cheap: the storages (which pull in fsspec) load on first use,
so ``import ckptstore.api`` stays free of heavy dependencies, as the conformance suite
requires.

Modules: ``api`` (the contract), ``errors`` (typed errors, each a subclass of the built-in the
contract names), ``validation`` (the one argument check of every public constructor and
method), ``redaction`` (``redact``/``redact_text``: what ``repr``, errors and logs show),
``io_errors`` (the one mapping of file-system failures to the contract's ``OSError`` types),
``paths`` (Flink's Path normalisation), and three wings: ``stores`` (one adapter per store
family behind one protocol, the registry of file systems, the raw operations, the S3 retry
budget: ``retry_budget``), ``filesystem`` (the file-system storage: locations, streams,
metadata, handles, pointers, layout, crash leftovers), ``jobmanager`` (the JobManager
storage), plus ``flink_metadata`` (Flink's ``_metadata`` format: the standalone package
``flinkmeta`` under the reference's errors) and ``admin`` (tools for checkpoint roots).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.4.0"

_LAZY = {
    "FileSystemCheckpointStorage": "ckptstore.filesystem.storage",
    "JobManagerCheckpointStorage": "ckptstore.jobmanager.storage",
    "FileStateHandle": "ckptstore.filesystem.handles",
    "RelativeFileStateHandle": "ckptstore.filesystem.handles",
    "CheckpointConfig": "ckptstore.config",
    "CheckpointingMode": "ckptstore.config",
    "ExternalizedCheckpointRetention": "ckptstore.config",
    "ExternalizedCheckpointCleanup": "ckptstore.config",
    "load_checkpoint_storage": "ckptstore.loader",
    "conformance_target": "ckptstore.targets",
    "ByteStreamStateHandle": "ckptstore.api",
    "CheckpointedStateScope": "ckptstore.api",
    "CheckpointStorageLocationReference": "ckptstore.api",
    "JobID": "ckptstore.api",
    "Leftover": "ckptstore.filesystem.leftovers",
    "RetryBudget": "ckptstore.stores.retry",
    "redact": "ckptstore.redaction",
    "retry_budget": "ckptstore.stores.retry",
}

__all__ = [
    "ByteStreamStateHandle",
    "CheckpointConfig",
    "CheckpointStorageLocationReference",
    "CheckpointedStateScope",
    "CheckpointingMode",
    "ExternalizedCheckpointCleanup",
    "ExternalizedCheckpointRetention",
    "FileStateHandle",
    "FileSystemCheckpointStorage",
    "JobID",
    "JobManagerCheckpointStorage",
    "Leftover",
    "RelativeFileStateHandle",
    "RetryBudget",
    "__version__",
    "conformance_target",
    "load_checkpoint_storage",
    "redact",
    "retry_budget",
]

if TYPE_CHECKING:  # the names __getattr__ provides, for type checkers
    from ckptstore.api import (
        ByteStreamStateHandle,
        CheckpointedStateScope,
        CheckpointStorageLocationReference,
        JobID,
    )
    from ckptstore.config import (
        CheckpointConfig,
        CheckpointingMode,
        ExternalizedCheckpointCleanup,
        ExternalizedCheckpointRetention,
    )
    from ckptstore.filesystem.handles import FileStateHandle, RelativeFileStateHandle
    from ckptstore.filesystem.leftovers import Leftover
    from ckptstore.filesystem.storage import FileSystemCheckpointStorage
    from ckptstore.jobmanager.storage import JobManagerCheckpointStorage
    from ckptstore.loader import load_checkpoint_storage
    from ckptstore.redaction import redact
    from ckptstore.stores.retry import RetryBudget, retry_budget
    from ckptstore.targets import conformance_target


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ckptstore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
