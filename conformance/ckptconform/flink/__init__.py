"""Apache Flink 2.3.0 itself, for the kit: its jars, one JVM per process, its metadata loader.

``jars`` fetches and caches Flink's jars (``unavailable_reason()``: why Flink cannot run here,
in one sentence); ``gateway`` runs them in one JVM per process through py4j (``jvm()``,
``java_errors``: Java exceptions as the contract's built-in types); ``metadata`` loads and
stores ``_metadata`` with Flink's own ``Checkpoints`` and summarises what Flink loaded. The
FLK clause and ``ckptconform bench --peer flink`` use them, and so do the Flink targets.
Importing this package starts no JVM and needs no py4j.
"""
