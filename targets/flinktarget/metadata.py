"""Flink 2.3.0's own loader and writer of checkpoint metadata: the kit's
``ckptconform.flink.metadata``, re-exported (``load``, ``store``, ``summary``,
``handle_classes``)."""

from __future__ import annotations

from ckptconform.flink.metadata import StreamEntry, handle_classes, load, store, summary

__all__ = ["StreamEntry", "handle_classes", "load", "store", "summary"]
