"""One write of the facts of a root's sessions to a target, under the root's analytics lock:
what ``asz export parquet`` and the service's pass both run."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from asz.analytics.place import open_place
from asz.analytics.write import FactsExport, FactsTally
from asz.config import Config
from asz.redact import configured_redactor
from asz.store import ANALYTICS_LOCK_FILE, REDACT_KEY_FILE, STATE_DIR, Store, state_lock
from asz.view.prices import price_table

__all__ = ["AnalyticsBusy", "write_facts"]


class AnalyticsBusy(Exception):
    """Another writer of this root's facts is running."""


def write_facts(
    config: Config, store: Store, root: Path, target: str, sessions: Iterable[str]
) -> FactsTally:
    """Writes what changed in ``sessions`` to ``target`` (a directory or ``s3://``), and
    compacts the days that are due; AnalyticsBusy at once when another writer holds the
    root's lock, ValueError when the ``[redact]`` policy or key cannot be used (nothing is
    written raw)."""
    busy = lambda: AnalyticsBusy(f"another analytics writer from {root} is running")  # noqa: E731
    with state_lock(root, ANALYTICS_LOCK_FILE, busy):
        # The key is kept under _state: made only once the lock found the root safe.
        redactor = configured_redactor(config, root / STATE_DIR / REDACT_KEY_FILE)
        export = FactsExport(
            store,
            root,
            open_place(target, config.archive),
            price_table(config.prices),
            redactor,
            quiet_seconds=config.analytics.quiet_seconds,
        )
        return export.run(sessions)
