"""The conformance target: how ``pytest --impl=auditstore`` builds the storage.

The suite passes documented option keys (CONFORMANCE.md, "Options"); each is mapped to this
storage's own keyword here, and a key it does not know is refused rather than ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auditstore.storage import audit_storage
from ckptstore import FileSystemCheckpointStorage

#: suite option key -> AuditStorage keyword
OPTIONS = {
    "inline_threshold": "file_state_size_threshold",
    "write_buffer_size": "write_buffer_size",
    "entropy_key": "entropy_key",
    "entropy_length": "entropy_length",
    "storage_options": "storage_options",
}


class AuditTarget:
    name = "auditstore"
    capabilities = frozenset(
        {"file-layout", "inline-state", "savepoints", "relocatable-savepoints",
         "task-owned-state", "fast-duplicate", "entropy-injection"}
    )  # fmt: skip
    schemes = frozenset({"file", "memory", "s3"})
    options = frozenset(OPTIONS)

    def make_storage(
        self,
        *,
        checkpoint_dir: str | None,
        savepoint_dir: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> FileSystemCheckpointStorage:
        unknown = sorted(set(options or {}) - OPTIONS.keys())
        if unknown:
            raise ValueError(f"auditstore does not support the option(s) {unknown}")
        if checkpoint_dir is None:
            raise ValueError("auditstore needs a checkpoint directory")
        kwargs = {OPTIONS[k]: v for k, v in (options or {}).items() if v is not None}
        return audit_storage(checkpoint_dir, savepoint_path=savepoint_dir, **kwargs)


conformance_target = AuditTarget()
