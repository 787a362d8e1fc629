"""auditstore: the reference file-system storage with a 4 KiB inline threshold.

An example of a storage that a team keeps in its own repository and gates on the conformance
kit (see tox.ini and .github/workflows/conformance.yml beside this package).
``conformance_target`` is what ``pytest --impl=auditstore`` runs.
"""

from auditstore.storage import audit_storage
from auditstore.target import conformance_target

__all__ = ["audit_storage", "conformance_target"]
