"""The JobManager checkpoint storage: state inline in handles, optional metadata files (MEM1-MEM5).

``storage`` (``JobManagerCheckpointStorage``), ``access`` (one job's view), ``locations``
(checkpoint and savepoint locations), ``memory_streams`` (the in-memory state streams).
"""
