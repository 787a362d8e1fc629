"""audit_storage: the reference file-system storage with this team's 4 KiB inline threshold."""

from __future__ import annotations

from typing import Any

from ckptstore import FileSystemCheckpointStorage

INLINE_THRESHOLD = 4096


def audit_storage(checkpoint_dir: str, **kwargs: Any) -> FileSystemCheckpointStorage:
    """A ``FileSystemCheckpointStorage`` on ``checkpoint_dir``; states up to 4 KiB stay inline."""
    if kwargs.get("file_state_size_threshold") is None:
        kwargs["file_state_size_threshold"] = INLINE_THRESHOLD
    return FileSystemCheckpointStorage(checkpoint_dir, **kwargs)
