"""The progress of ``ckptconform bench`` and ``ckptconform budget``, on stderr.

In a terminal: one ``rich`` bar over a command's steps, named after the command, that
disappears when the command is done. Elsewhere (output piped or captured, or without ``rich``,
the ``budget`` extra): plain lines, one when the command starts, then one at most every
``PLAIN_EVERY`` seconds naming the step that ended, and one for every failed step and for the
last one, so that a log shows the run moving.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any

__all__ = ["PLAIN_EVERY", "Progress"]

#: seconds between two plain progress lines (failed steps and the last step always print)
PLAIN_EVERY = 10.0


class Progress:
    """Progress over ``total`` steps of ``command``; each ``advance`` shows the step that
    ended, as failed (in red in a terminal) when it did not complete."""

    def __init__(self, command: str, total: int) -> None:
        self.command = command
        self.total = total
        self._progress: Any = None
        self._task: Any = None
        self._done = 0
        self._started = time.monotonic()
        self._last_line = self._started

    def __enter__(self) -> Progress:
        self._started = self._last_line = time.monotonic()
        if not sys.stderr.isatty():
            self._line(f"{self.total} steps")
            return self
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress
        except ImportError:
            self._line(f"{self.total} steps")
            return self
        self._progress = RichProgress(
            TextColumn(f"[bold]{self.command}[/bold] {{task.description}}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(file=sys.stderr),
            transient=True,
        )
        self._progress.__enter__()
        self._task = self._progress.add_task("starting", total=self.total)
        return self

    def advance(self, description: str, *, failed: bool = False) -> None:
        """One more step done: ``description`` names it, ``failed`` marks it as failed."""
        self._done += 1
        if self._progress is not None:
            state = " [red]failed[/red]" if failed else ""
            self._progress.update(self._task, advance=1, description=f"{description}{state}")
            return
        now = time.monotonic()
        if failed or self._done >= self.total or now - self._last_line >= PLAIN_EVERY:
            state = " failed" if failed else ""
            self._line(f"{self._done}/{self.total} {description}{state}")

    def _line(self, text: str) -> None:
        now = time.monotonic()
        self._last_line = now
        elapsed = now - self._started
        print(f"{self.command}: {text} ({elapsed:.0f} s)", file=sys.stderr, flush=True)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.__exit__(exc_type, exc, traceback)
