"""Where each kind of landed file sits in a root, as paths relative to it (see ``asz.store``).

Pure names and no I/O, so that every backend, writer and reader agrees on them: a path is a
``/``-separated string relative to the root, whatever holds the root.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from asz.bodykeys import is_session_id

__all__ = [
    "ANALYTICS_DIR",
    "ANALYTICS_LOCK_FILE",
    "BODY_KIND",
    "CURSOR_FILE",
    "EXPORT_CURSORS_DIR",
    "EXPORT_LOCK_FILE",
    "EXTENT_PREFIX",
    "FACTS_FILE",
    "GENERATION_DIR_PREFIX",
    "GENERATION_FILE_PREFIX",
    "GENERATION_SUFFIX",
    "INDEX_KIND",
    "KINDS",
    "LANDED_SUFFIX",
    "LANDING_LOCK_FILE",
    "LOCK_FILE",
    "MANIFESTS_FILE",
    "PROVIDER_INDEX_STATE_FILE",
    "PROVIDER_LEDGER_FILE",
    "PUSH_LOCK_FILE",
    "PUSH_RECORD_FILE",
    "PUSH_SNAPSHOT_FILE",
    "REDACTED_DIR",
    "REDACTIONS_SUFFIX",
    "REDACT_KEY_FILE",
    "REPACK_LOCK_FILE",
    "REPORT_FILE",
    "ROOT_ID_FILE",
    "SEQ_FILE",
    "SESSION_LIST_FILE",
    "STATE_DIR",
    "STREAM_PREFIX",
    "SUMMARY_FILE",
    "TRANSCRIPTS_DIR",
    "TRANSCRIPT_KIND",
    "GenerationId",
    "LandedName",
    "NotASession",
    "bodies_dir",
    "extent_path",
    "facts_path",
    "generation_dir",
    "generation_file",
    "index_dir",
    "is_stream_key",
    "landed_name",
    "manifests_path",
    "ordinary_path",
    "parse_extent",
    "parse_generation_dir",
    "parse_generation_file",
    "parse_landed",
    "redactions_path",
    "report_path",
    "seq_file",
    "session_dir",
    "stream_dir",
    "stream_key",
    "summary_path",
    "transcripts_dir",
]

LANDED_SUFFIX = ".asz"
BODY_KIND = "provider_body"
INDEX_KIND = "provider_index"
TRANSCRIPT_KIND = "transcript"
KINDS = (BODY_KIND, INDEX_KIND, TRANSCRIPT_KIND)
TRANSCRIPTS_DIR = "transcripts"
STREAM_PREFIX = "s-"
SEQ_FILE = "seq"
EXTENT_PREFIX = "extent-"
"""In a bucket only: ``<session>/extent-<n>``, an empty object a push creates before it sends
the session's files up to number ``n``, so a reader of a session whose newest files are not
there yet reads it as incomplete, as the local ``seq`` file makes a local reader do."""
SUMMARY_FILE = "summary.json"
REPORT_FILE = "cache.json"
MANIFESTS_FILE = "manifests.json"
FACTS_FILE = "facts.json"
CURSOR_FILE = "cursor.json"
"""The derived files of a session (``asz.store._derived``); a cursor is one per stream."""
STATE_DIR = "_state"
LOCK_FILE = "_lock"
PUSH_LOCK_FILE = "archive-push.lock"
EXPORT_LOCK_FILE = "otlp-export.lock"
"""Under ``_state``: one push, and one OTLP export, from a root at a time."""
REPACK_LOCK_FILE = "repack.lock"
LANDING_LOCK_FILE = "landing.lock"
"""Under ``_state``: one repack at a time, and landing or publishing a generation, never both
(``asz.store._generation``)."""
GENERATION_DIR_PREFIX = "g-"
GENERATION_FILE_PREFIX = "generation-"
GENERATION_SUFFIX = ".json"
ROOT_ID_FILE = "root-id"
"""Under ``_state``: the root's own random id, which names the analytics files it writes."""
ANALYTICS_DIR = "analytics"
"""Under ``_state``: ``<target digest>.json``, what was written to each analytics target, and
``<target digest>/<session>-<pass>.json``, the keys of each session's rows written there."""
ANALYTICS_LOCK_FILE = "analytics.lock"
"""Under ``_state``: one analytics writer from a root at a time."""
SESSION_LIST_FILE = "session-list.json"
"""Under ``_state``, only where a root's derived state lives apart from it (an archive's
local cache): the web server's session list as it last made it, which its next start
answers with while it makes the list afresh (``asz.web.library``)."""
PROVIDER_LEDGER_FILE = "provider-ledger.sqlite"
PROVIDER_INDEX_STATE_FILE = "provider-index.json"
"""Under ``_state``: the body files the provider adapter judged, and how far it read
``index.jsonl`` (``asz.adapters``)."""
PUSH_RECORD_FILE = "archive-pushed.jsonl"
PUSH_SNAPSHOT_FILE = "archive-pushed.json"
"""Under ``_state``: what this root pushed to its archive, a journal and the snapshot it
rests on (``asz.archive.record``)."""
EXPORT_CURSORS_DIR = "otlp"
"""Under ``_state``: ``<endpoint digest>/<session>.json``, the spans of each session an OTLP
endpoint was sent (``asz.export.cursor``)."""
REDACT_KEY_FILE = "redact.key"
"""Under ``_state``: the redaction key made for a root that was given none (``asz.redact``)."""
REDACTED_DIR = "redacted"
"""Under ``_state``: the redacted counterpart of the root a push sends, one directory per
redaction policy (``asz.archive.redacted``)."""
REDACTIONS_SUFFIX = ".redactions.json"
"""Beside a redacted landed file: the rules that fired in it, at which JSON paths."""
_LANDED_NAME = re.compile(r"^([a-z_]+)-(\d{8,})\.asz$")
_GENERATION_DIR = re.compile(r"^g-(\d{8,})(?:\.([1-9]\d*))?$")
_GENERATION_FILE = re.compile(r"^generation-(\d{8,})(?:\.([1-9]\d*))?\.json$")
_STREAM_KEY = re.compile(r"^s-[0-9a-f]{16}$")


class NotASession(ValueError):
    """A session id that is not in Claude Code's UUID form; it never names a directory."""


@dataclass(frozen=True, slots=True, order=True)
class LandedName:
    """A landed file's place in its session's sequence, its kind and its path in the root."""

    seq: int
    kind: str
    path: str
    part: str = ""
    """For a transcript pack (a file of a generation holding windows of several streams of
    the session, ``asz.store._streams``) named for one stream directory: that directory's
    name, whose windows alone the name stands for; "" for a whole file."""

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True, order=True)
class GenerationId:
    """Which generation of a session: the numbers it replaces (1 to ``replaces``), and its
    revision among the generations that replace the same numbers. The newest is the highest,
    by ``replaces`` then ``revision``.

    A revision above 0 is a generation written again over numbers one replaced already: a
    session re-redacted for the archive when a generation there covers every number it has
    (``asz.archive.redacted``). Names without a revision are revision 0, so the names written
    before there were revisions read as they did."""

    replaces: int
    revision: int = 0

    @property
    def suffix(self) -> str:
        """What follows ``g-`` or ``generation-`` in its names: the number, and ``.<revision>``
        above revision 0."""
        return f"{self.replaces:08d}" + (f".{self.revision}" if self.revision else "")


def session_dir(session: str) -> str:
    """The session's directory; raises NotASession for anything not in Claude Code's form."""
    if not is_session_id(session):
        raise NotASession(f"{session!r} is not a Claude Code session id")
    return session


def bodies_dir(session: str) -> str:
    return f"{session_dir(session)}/{BODY_KIND}"


def index_dir(session: str) -> str:
    return f"{session_dir(session)}/{INDEX_KIND}"


def transcripts_dir(session: str) -> str:
    return f"{session_dir(session)}/{TRANSCRIPTS_DIR}"


def stream_key(relpath: str) -> str:
    """The directory a transcript source lands in, from its path under the projects dir: any
    name, however odd, maps to a safe directory name, and a source always to the same one."""
    return STREAM_PREFIX + hashlib.sha256(relpath.encode()).hexdigest()[:16]


def is_stream_key(name: object) -> bool:
    """Whether ``name`` is a stream directory's name as :func:`stream_key` makes them."""
    return isinstance(name, str) and _STREAM_KEY.match(name) is not None


def stream_dir(session: str, relpath: str) -> str:
    return f"{transcripts_dir(session)}/{stream_key(relpath)}"


def seq_file(session: str) -> str:
    return f"{session_dir(session)}/{SEQ_FILE}"


def extent_path(session: str, seq: int) -> str:
    return f"{session_dir(session)}/{EXTENT_PREFIX}{seq:08d}"


def parse_extent(name: str) -> int | None:
    """The number an ``extent-<n>`` object's name promises, or None for any other name."""
    digits = name.removeprefix(EXTENT_PREFIX)
    return int(digits) if digits != name and digits.isdigit() else None


def summary_path(session: str) -> str:
    return f"{session_dir(session)}/{SUMMARY_FILE}"


def report_path(session: str) -> str:
    return f"{session_dir(session)}/{REPORT_FILE}"


def manifests_path(session: str) -> str:
    return f"{session_dir(session)}/{MANIFESTS_FILE}"


def facts_path(session: str) -> str:
    return f"{transcripts_dir(session)}/{FACTS_FILE}"


def redactions_path(path: str) -> str:
    """The redaction record of the redacted landed file at ``path``."""
    return path + REDACTIONS_SUFFIX


def landed_name(kind: str, seq: int) -> str:
    return f"{kind}-{seq:08d}{LANDED_SUFFIX}"


def parse_landed(directory: str, name: str) -> LandedName | None:
    """The landed file ``name`` in ``directory``, or None for any other name."""
    match = _LANDED_NAME.match(name)
    if match is None:
        return None
    return LandedName(int(match.group(2)), match.group(1), f"{directory}/{name}")


def generation_dir(session: str, generation: GenerationId) -> str:
    """Where the files of the session's generation ``generation`` are written, in the
    session's own layout below it (``g-<seq>[.<revision>]/provider_body/...``)."""
    return f"{session_dir(session)}/{GENERATION_DIR_PREFIX}{generation.suffix}"


def generation_file(session: str, generation: GenerationId) -> str:
    """The generation's manifest: written last, create-only; the generation counts from then."""
    return f"{session_dir(session)}/{GENERATION_FILE_PREFIX}{generation.suffix}{GENERATION_SUFFIX}"


def parse_generation_dir(name: str) -> GenerationId | None:
    """The generation a generation directory's name says it holds, or None."""
    return _generation_id(_GENERATION_DIR.match(name))


def parse_generation_file(name: str) -> GenerationId | None:
    """The generation a manifest's name says it publishes, or None."""
    return _generation_id(_GENERATION_FILE.match(name))


def _generation_id(match: re.Match[str] | None) -> GenerationId | None:
    if match is None:
        return None
    return GenerationId(int(match.group(1)), int(match.group(2) or 0))


def ordinary_path(session: str, path: str) -> str:
    """The path ``path`` of a generation's file would have among the session's ordinary
    landed files: the generation directory taken out (a directory a reader knows by kind and
    stream). Any other path is given back as it is."""
    prefix = f"{session_dir(session)}/"
    rest = path[len(prefix) :] if path.startswith(prefix) else ""
    head, _, tail = rest.partition("/")
    if tail and parse_generation_dir(head) is not None:
        return prefix + tail
    return path
