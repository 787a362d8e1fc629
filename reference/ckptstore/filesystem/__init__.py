"""The file-system checkpoint storage: checkpoints on any fsspec file system (CS4, CFG2-CFG5).

``storage`` (``FileSystemCheckpointStorage``), ``access`` and ``base_access`` (one job's view,
and what the JobManager storage's shares), ``locations``, ``streams`` (state output streams),
``metadata`` (``_metadata`` and completed checkpoints), ``toolset`` (fast duplication),
``handles`` (file state handles), ``pointers`` (resolving external pointers), ``layout`` (the
names disposal may delete), ``leftovers`` (what a crash left behind), ``entropy`` (entropy
injection).
"""
