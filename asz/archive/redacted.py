"""The redacted counterpart of a root: what a push sends while the redaction policy is on.

Under ``_state/redacted/<policy fingerprint>/`` (private, like all of ``_state``) each landed
file of the root has, once a push needed it, a counterpart of the same path and sequence
number: a landed file in the store's own format whose records hold what the root's hold,
redacted (``asz.redact.Redactor``), and whose digests are those of the redacted bytes, so
that it verifies as any landed file does. Beside it, ``<name>.asz.redactions.json`` says
which rules fired at which JSON paths (never a value).

Its files are made by ``asz.archive.redacted_making`` and its generations mirrored or
re-redacted by ``asz.archive.redacted_generations``, each a part of ``RedactedRoot`` on the
directory ``asz.archive.redacted_files`` reads.
"""

from __future__ import annotations

import collections
import contextlib
from pathlib import Path

import orjson

from asz.archive.redacted_generations import Mirroring
from asz.archive.redacted_making import RECORD_FORMAT, Made, Making, Staged, said
from asz.atomic import private_dir, remove_stale_temps
from asz.config import Config
from asz.redact import Redactor, configured_redactor
from asz.store import (
    REDACT_KEY_FILE,
    REDACTED_DIR,
    STATE_DIR,
    Generation,
    LandedName,
    LocalBackend,
    Store,
    parse_landed,
)

__all__ = [
    "BUCKET_RECORDS",
    "RECORD_FORMAT",
    "Made",
    "RedactedRoot",
    "bucket_record",
    "redacted_root",
    "root_redactor",
]

BUCKET_RECORDS = "_archive/redactions"
"""Where the archive keeps each pushed file's redaction record: beside the sessions, under a
name no reader of sessions lists."""


class RedactedRoot(Making, Mirroring):
    """The counterpart of the root ``store`` reads, kept in ``path`` (a private directory
    of one policy's), made with one redactor (see the module)."""

    def rules(self, path: str) -> collections.Counter[str]:
        """How many markers each rule left in the counterpart of ``path``."""
        counts: collections.Counter[str] = collections.Counter()
        with contextlib.suppress(OSError, orjson.JSONDecodeError, AttributeError, TypeError):
            counts.update(orjson.loads(self.record(path)).get("rules", {}))
        return counts

    def make(self, session_id: str, upto: LandedName) -> Made:
        """Makes every missing counterpart of the session's files up to ``upto``."""
        return self.make_all([(session_id, upto)])[session_id]

    def make_all(self, wanted: list[tuple[str, LandedName]]) -> dict[str, Made]:
        """Makes every missing counterpart of each session's files up to the file named
        with it, in sequence order, each session stopping at its first file that fails
        (``asz.archive.redacted_making``). Files are published a batch at a time, across
        sessions."""
        if not self._swept:
            # Only the holder of the push lock writes here: a temporary file is a dead one's.
            private_dir(self.path)
            remove_stale_temps(self.path)
            self._swept = True
        staged = Staged(self.shadow.batch())
        made = {session: self._make_session(session, upto, staged) for session, upto in wanted}
        staged.publish()
        for session, outcome in made.items():
            try:
                self.mirror(session)
            except Exception as err:  # its files are made; the manifest waits for the next
                outcome.failed = outcome.failed or (session, said(err))
        return made

    def landed(self, session_id: str) -> list[LandedName]:
        """The counterpart's files of the session as a reader counts them: its newest
        generation's (mirrored or re-redacted) and the files after it."""
        return self.shadow.open_session(session_id).landed(checked=False)

    def generation(self, session_id: str) -> Generation | None:
        """The newest generation of the session's counterpart, None when it has none."""
        return self.shadow.open_session(session_id).generation()

    def differs(self, path: str, policy: str) -> bool:
        """Whether what the counterpart holds at ``path`` differs from what went under
        ``policy`` ("": raw), record by record: True when either cannot be read here (the
        other policy's counterpart is no longer kept)."""
        old = self.store if not policy else Store(LocalBackend(self.path.parent / policy))
        directory, _, name = path.rpartition("/")
        landed = parse_landed(directory, name)
        if landed is None:
            return True
        session = path.split("/", 1)[0]
        try:
            ours = self.shadow.open_session(session).read(landed).records
            theirs = old.open_session(session).read(landed).records
        except Exception:  # not kept, or does not read: it may differ
            return True
        return [(r.meta, r.payload) for r in ours] != [(r.meta, r.payload) for r in theirs]


def root_redactor(config: Config, key_file: Path) -> Redactor | None:
    """The config's redactor (``asz.redact.configured_redactor``, the key kept in
    ``key_file`` when none is given); None when the policy is off and files go raw, and then
    no key is looked for or made."""
    if not config.redact.enabled:
        return None
    return configured_redactor(config, key_file)


def redacted_root(config: Config, root: Path, store: Store) -> RedactedRoot | None:
    """What a push from ``root`` sends under the config's policy; None: the files go raw."""
    redactor = root_redactor(config, root / STATE_DIR / REDACT_KEY_FILE)
    if redactor is None:
        return None
    return RedactedRoot(
        root / STATE_DIR / REDACTED_DIR / redactor.policy.fingerprint, store, redactor
    )


def bucket_record(path: str) -> str:
    """The archive's path of the redaction record of the landed file at ``path``."""
    return f"{BUCKET_RECORDS}/{path}.json"
