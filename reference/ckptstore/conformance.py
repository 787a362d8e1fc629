"""Deprecated: the reference's conformance targets are ``ckptstore.targets``.

Kept so that code importing ``ckptstore.conformance`` keeps working; importing it warns.
"""

from __future__ import annotations

import warnings

from ckptstore.targets import conformance_target, jobmanager_target

__all__ = ["conformance_target", "jobmanager_target"]

warnings.warn(
    "ckptstore.conformance is deprecated: import ckptstore.targets instead",
    DeprecationWarning,
    stacklevel=2,
)
