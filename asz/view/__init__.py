"""Reading what landed: the per-session view document, its timeline, and the cache report."""

from asz.view.cache import cache_report
from asz.view.cache_text import report_cells, report_summary
from asz.view.document import build_view
from asz.view.timeline import format_timeline

__all__ = ["build_view", "cache_report", "format_timeline", "report_cells", "report_summary"]
