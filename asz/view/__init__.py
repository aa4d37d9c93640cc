"""Reading what landed: the per-session view document and the cache report."""

from asz.view.cache import cache_report, format_cache_report
from asz.view.document import build_view

__all__ = ["build_view", "cache_report", "format_cache_report"]
