"""Flink 2.3.0's own loader and writer of checkpoint metadata: the kit's
``ckptconform.flink.metadata``, re-exported (``load``, ``store``, ``summary``)."""

from __future__ import annotations

from ckptconform.flink.metadata import StreamEntry, load, store, summary

__all__ = ["StreamEntry", "load", "store", "summary"]
