"""A root opened so that nothing can be written to it, whatever a reader tries.

Readers of a root keep derived state where they may (a session's ``summary.json``, its
``facts.json``, its kept cache report) and carry on when the write fails, since a root may be
read-only. The web server must never write, even there: it runs beside the collector and
would race it for those files. Rather than passing ``keep=False`` through every reader and
trusting each to obey, the server opens the root on a backend whose writing calls all fail
with ``PermissionError``, which every reader already takes as "this root cannot be written".
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from asz.store import LocalBackend, Store, TempFile
from asz.store.atomic import DirSyncs


class ReadOnlyBackend(LocalBackend):
    """A local root whose writing calls fail; reading is :class:`LocalBackend`'s."""

    def write_temp(self, path: str, data: bytes) -> NoReturn:
        _refuse(path)

    def publish(
        self,
        temps: Sequence[TempFile],
        defer: DirSyncs | None,
        published: Callable[[int], None],
    ) -> NoReturn:
        _refuse(temps[0].path if temps else "")

    def remove_temp(self, temp: TempFile) -> NoReturn:
        _refuse(temp.path)

    def replace_derived(self, path: str, data: bytes) -> NoReturn:
        _refuse(path)


def _refuse(path: str) -> NoReturn:
    raise PermissionError(errno.EROFS, "the web server never writes to the root", path)


def open_readonly(location: str | os.PathLike[str]) -> Store:
    """The root at ``location``, readable and never written."""
    return Store(ReadOnlyBackend(Path(os.fspath(location))))
