"""The service's analytics writes: after each pass, the facts of what it landed (and of the
sessions whose rows were waiting) go to ``[analytics] url`` (``asz.analytics``).

The first write after the service starts looks at every session, since some may have landed
while it was stopped; a write that failed is retried with every session after the next pass.
A failure is logged and never stops the pass or the service.
"""

from __future__ import annotations

from structlog.typing import FilteringBoundLogger

from asz.config import Config
from asz.store import Store

__all__ = ["FactsWriter"]


class FactsWriter:
    def __init__(self, config: Config, store: Store, log: FilteringBoundLogger) -> None:
        self.config = config
        self.store = store
        self.log = log
        self._due: set[str] | None = None
        """Sessions to write besides those a pass landed; None: every one."""

    def after_pass(self, landed: set[str]) -> None:
        """Writes the facts of ``landed`` and of the sessions due (in the pass's thread)."""
        # Here: pyarrow is loaded by a service that writes tables, not by every service.
        from asz.analytics.run import AnalyticsBusy, write_facts

        due = self.store.sessions() if self._due is None else sorted(self._due | landed)
        url = self.config.analytics.url
        try:
            tally = write_facts(self.config, self.store, self.config.root, url, due)
        except AnalyticsBusy as err:
            self.log.info("analytics_skipped", message=str(err))
            self._due = set(due)
            return
        except Exception as err:  # the bucket, the disk, a bug: the next pass tries again
            self.log.error("analytics_failed", error=repr(err), exc_info=err)
            self._due = None
            return
        self._due = tally.unfinished
        if tally.calls or tally.session_rows or tally.files_compacted:
            self.log.info(
                "analytics_written", **tally.as_dict() | {"problems": len(tally.problems)}
            )
