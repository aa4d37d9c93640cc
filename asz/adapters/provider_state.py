"""What the provider adapter keeps between passes, and how it looks at named files again.

A long-running collector keeps the provider ledger open and remembers which files its last
pass left unsettled, so that a pass told which files changed (the watcher's hints) looks at
those and these only, each with one ``lstat`` per bodies directory, instead of listing large
directories.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from asz.adapters.provider_ledger import Ledger, ledger_path, load_ledger
from asz.adapters.provider_source import Listing, SourceFile, distinct_dirs, parse_body_name
from asz.bodykeys import is_session_id
from asz.store import BODY_KIND, BodyLander, Root

__all__ = ["QUIET_NS", "Marks", "ProviderState", "file_mark", "look_again", "marks_of"]

QUIET_NS = 1_000_000_000
"""How long a bodies directory must have gone unchanged before a listing of it is trusted to
stand until its mtime moves."""

Marks = tuple[tuple[int, ...] | None, ...]
"""One ``file_mark`` per bodies directory, in order (None for one that is not there)."""


class ProviderState:
    """What the adapter keeps from one pass to the next in one process.

    The open ledger: reading every entry's stat again costs more than the rest of an idle pass
    over a large directory. And the files the last pass left unsettled (anything but landed
    at the stat it was judged at), so that a pass told which files changed looks at those and
    these only. ``asz collect --once`` starts from a fresh state and closes it; the service
    keeps one for its life. A pass that fails forgets everything, so the next one reopens the
    ledger as last saved and lists the directory again.
    """

    def __init__(self) -> None:
        self._ledger: Ledger | None = None
        self._mark: tuple[int, ...] | None = None
        self.unsettled: dict[str, SourceFile] | None = None
        """None until a pass listed the whole directories."""
        self.listed: Marks | None = None
        """The directories' marks when they were last listed, if they had been quiet a while."""

    def check(self, root: Root) -> None:
        """Forgets everything when the ledger's file is not the one this state last saved
        (replaced, removed or written by anything else): the files must be judged afresh."""
        if self._ledger is not None and self._mark != file_mark(ledger_path(root)):
            self.close()

    def ledger(self, bodies: BodyLander, root: Root) -> Ledger:
        if self._ledger is None:
            self._ledger = load_ledger(bodies.store, root)
            self.saved(root)
        return self._ledger

    def saved(self, root: Root) -> None:
        self._mark = file_mark(ledger_path(root))

    def unmoved(self, directories: Sequence[Path], bodies: BodyLander, root: Root) -> bool:
        """Whether no file came or went in any of ``directories`` since they were last listed
        (their mtimes say so), and every session holding landed bodies still has them (else
        those bodies are read and landed again, which only a listing finds)."""
        if self.listed is None or self.listed != marks_of(directories):
            return False
        return all(
            is_session_id(session) and (root.session_dir(session) / BODY_KIND).is_dir()
            for session in self.ledger(bodies, root).landed_sessions()
        )

    def close(self) -> None:
        """Closes the ledger (what was not saved is rolled back) and forgets the listing."""
        if self._ledger is not None:
            self._ledger.close()
        self._ledger = None
        self.unsettled = None
        self.listed = None


def look_again(directories: Sequence[Path], names: Iterable[str]) -> Listing:
    """The files of ``names`` that are there, as ``list_sources`` would list them: each from
    the first directory holding it as a regular file, with one ``lstat`` per directory asked;
    a name no longer there (or no longer a regular file) is left out."""
    listing = Listing(present=[d for d in distinct_dirs(directories) if _is_dir(d)])
    for name in sorted(names):
        parsed = parse_body_name(name)
        if parsed is None:
            continue
        for directory in listing.present:
            try:
                info = os.lstat(directory / name)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as err:
                listing.errors.append(f"{name}: cannot be looked at: {err.strerror}")
                break
            if stat.S_ISREG(info.st_mode):
                listing.files.append(
                    SourceFile(name, parsed[1], info.st_size, info.st_mtime_ns, directory)
                )
                break
    return listing


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False


def marks_of(directories: Sequence[Path]) -> Marks:
    return tuple(file_mark(directory) for directory in directories)


def file_mark(path: Path) -> tuple[int, ...] | None:
    """What changes whenever anything writes, replaces or removes the file at ``path``."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
