"""Tools for the people who run checkpoint roots: what a checkpoint holds (``inspect``),
whether it restores and what may be deleted (``audit``), and a self-contained copy (``copy``).

They read Flink's ``_metadata`` (``ckptstore.flink_metadata``) and reach stores through the
reference's store layer (``ckptstore.stores``), on every scheme the reference supports.
"""
