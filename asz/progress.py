"""Progress of long work (a first pass, a verify, a restore) for a person at a terminal.

Work that may take minutes reports what it did through a :class:`Progress`; on a terminal
that is a bar (done of the total, in files and bytes, and a rate) drawn on stderr by rich,
which handles terminal widths, redrawing and a rate without our own escape codes. Anywhere
else (a pipe, a log file, the service) it is :class:`Silent`, so nothing but the command's
own output is written.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress

__all__ = ["Progress", "Silent", "progress"]


class Progress(Protocol):
    """What long work says as it goes."""

    def grow(self, files: int, size: int) -> None:
        """More work was found: ``files`` more files of ``size`` bytes in all."""
        ...

    def advance(self, files: int, size: int) -> None:
        """``files`` files of ``size`` bytes in all are done."""
        ...


class Silent:
    """Progress nobody watches."""

    def grow(self, files: int, size: int) -> None:
        pass

    def advance(self, files: int, size: int) -> None:
        pass


class _Bar:
    """One bar on stderr: bytes done of the total with their rate, and files done of theirs."""

    def __init__(self, bars: RichProgress, label: str) -> None:
        self._bars = bars
        self._task = bars.add_task(label, total=0, files=0, of_files=0)

    def grow(self, files: int, size: int) -> None:
        task = self._bars.tasks[self._task]
        of_files = int(task.fields["of_files"]) + files
        self._bars.update(self._task, total=(task.total or 0) + size, of_files=of_files)

    def advance(self, files: int, size: int) -> None:
        done = int(self._bars.tasks[self._task].fields["files"]) + files
        self._bars.update(self._task, advance=size, files=done)


@contextmanager
def progress(label: str, *, force: bool | None = None) -> Iterator[Progress]:
    """Progress for ``label``: a bar when stderr is a terminal (or ``force``), else silent."""
    shown = sys.stderr.isatty() if force is None else force
    if not shown:
        yield Silent()
        return
    # rich is imported only when a bar is drawn: the store takes a Progress, and reading a
    # root must not pay for loading a terminal library.
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )
    from rich.progress import Progress as RichProgress

    console = Console(file=sys.stderr, force_terminal=True)
    bars = RichProgress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[files]}/{task.fields[of_files]} files"),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    with bars:
        yield _Bar(bars, label)
