"""A Spark session on this machine or a cluster, started and stopped cleanly: the JVM parts the
kit's Spark leg (``ckptconform.spark``) and the reference's Spark audit
(``ckptstore.admin.spark_audit``) share.

Neither the implementation under test nor the suite: it imports nothing of ``ckptstore`` or
``ckptconform``, so both may use it (docs/ARCHITECTURE.md section 2). pyspark is imported
only when a session is built.

- :mod:`sparkrun.java`: is there a Java new enough for Spark (one sentence when not).
- :mod:`sparkrun.session`: a session's settings for local masters (loopback, this interpreter
  and its import path on the executors), the JVM's own output sent to a log file, waiting for
  the executors to register, and a stop that ends py4j's JVM too. Local masters' JVMs run
  with :data:`LOCAL_JVM_OPTIONS` (client compiler, serial collector).
"""

from sparkrun.java import (
    JAVA_REQUIREMENT,
    MINIMUM_JAVA,
    java_major_version,
    java_unavailable_reason,
    spark_unavailable_reason,
)
from sparkrun.session import (
    LOCAL_JVM_OPTIONS,
    ExecutorsMissingError,
    await_executors,
    build_session,
    is_local_master,
    jvm_log_path,
    jvm_output_to,
    own_import_path,
    stop_session,
)

__all__ = [
    "JAVA_REQUIREMENT",
    "LOCAL_JVM_OPTIONS",
    "MINIMUM_JAVA",
    "ExecutorsMissingError",
    "await_executors",
    "build_session",
    "is_local_master",
    "java_major_version",
    "java_unavailable_reason",
    "jvm_log_path",
    "jvm_output_to",
    "own_import_path",
    "spark_unavailable_reason",
    "stop_session",
]
