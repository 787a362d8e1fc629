"""The progress bar of ``ckptconform bench`` and ``ckptconform budget``, on stderr.

One ``rich`` bar over a command's steps, named after the command, that disappears when the
command is done; silent when ``rich`` is not installed (the ``budget`` extra) and, as rich
does, when stderr is not a terminal.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

__all__ = ["Progress"]


class Progress:
    """A progress bar over ``total`` steps of ``command``; each ``advance`` shows the step that
    ended, in red as failed when it did not complete."""

    def __init__(self, command: str, total: int) -> None:
        self.command = command
        self.total = total
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> Progress:
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress
        except ImportError:
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
        """One more step done: ``description`` names it, ``failed`` marks it in red."""
        if self._progress is not None:
            state = " [red]failed[/red]" if failed else ""
            self._progress.update(self._task, advance=1, description=f"{description}{state}")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.__exit__(exc_type, exc, traceback)
