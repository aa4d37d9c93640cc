"""Reading what landed: the per-session view document, its timeline, and the cache report.

The names are loaded on first use: the parts that need no landed session (the usage
invariant, the price table, which ``asz statusline`` runs on a transcript as it grows) are
imported without the store behind the rest.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from asz.view.cache import cache_report
    from asz.view.cache_text import report_cells, report_summary
    from asz.view.document import build_view
    from asz.view.timeline import format_timeline

__all__ = ["build_view", "cache_report", "format_timeline", "report_cells", "report_summary"]

_HOMES = {
    "build_view": "asz.view.document",
    "cache_report": "asz.view.cache",
    "format_timeline": "asz.view.timeline",
    "report_cells": "asz.view.cache_text",
    "report_summary": "asz.view.cache_text",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(home), name)
