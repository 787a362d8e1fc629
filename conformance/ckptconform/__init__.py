"""ckptconform: a pytest plugin and suite that checks checkpoint storages against Flink's contract.

Run it against an installed implementation with ``pytest --impl=<target>`` (or the
``ckptconform`` command). Only ``ckptstore.api`` of the reference package is imported here.
``ConformanceTarget`` is the plug-in contract as a ``typing.Protocol`` (``ckptconform.contract``).
"""

from ckptconform.contract import ConformanceTarget

__all__ = ["ConformanceTarget", "__version__"]

__version__ = "0.4.0"
