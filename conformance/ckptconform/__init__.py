"""ckptconform: a pytest plugin and suite that checks checkpoint storages against Flink's contract.

Run it against an installed implementation with ``pytest --impl=<target>`` (or the
``ckptconform`` command). Only ``ckptstore.api`` of the reference package is imported here.
"""

__version__ = "0.1.0"
