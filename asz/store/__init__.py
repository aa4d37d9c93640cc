"""The storage root, read and landed through one door: ``open_store(location) -> Store``.

Everything that reads a root (``verify``, ``restore``, ``body``, the view, the cache report)
reads it through :class:`Store` and :class:`Session`, and everything that lands into one goes
through :class:`SessionWriter`; the store reaches its files through a small
:class:`Backend` (a local directory today). See ``docs/api.md`` for a worked example and
``docs/format.md`` for the bytes of each file.

The layout of a root (paths relative to it; this and ``docs/format.md`` are the two places
it is described)::

    _lock                                      one collector at a time (flock)
    _state/                                    derived state of the adapters (rebuildable)
        provider-ledger.sqlite                 the body files the provider adapter judged
        provider-index.json                    how far index.jsonl was read
        archive-pushed.json                    what asz push sent to the team archive (snapshot)
    archive-pushed.jsonl                   ... and what it sent since the snapshot
        archive-push.lock                      one push at a time (flock)
        redact.key                             the redaction key made when none is given (0600)
        redacted/<policy>/                     what asz push sends: the landed files, redacted
            <session>/.../<name>.asz.redactions.json  beside each: the rules that fired, where
        otlp/<endpoint digest>/<session>.json  what asz export otlp sent to an OTLP endpoint
        otlp-export.lock                       one export at a time (flock)
        repack.lock                            one repack at a time (flock)
        landing.lock                           a landing pass, or a generation published (flock)
        root-id                                the root's random id (analytics file names)
        analytics/<target digest>.json         what asz export parquet wrote to a target
    analytics/<target digest>/<session>-<pass>.json  the keys of a session's rows written
        analytics.lock                         one analytics writer at a time (flock)
    <session>/                                 a UUID-form session id; nothing else is one
        seq                                    derived: highest sequence number used
        summary.json                           derived: the session in one line (asz sessions)
        cache.json                             derived: the cache report, kept (asz cache)
    manifests.json                         derived: every landed body's manifest, by file
        provider_body/provider_body-<seq>.asz  landed provider bodies
        provider_index/provider_index-<seq>.asz  landed index.jsonl lines
        transcripts/
            facts.json                         derived: calls, directories, cwds, activity
            s-<16 hex>/                        one transcript source (a stream)
                cursor.json                    derived: how far the source was landed
                transcript-<seq>.asz           landed windows of complete lines
        generation-<seq>[.<rev>].json          a generation's manifest: replaces numbers 1 to <seq>
        g-<seq>[.<rev>]/                       the generation's files, in the layout above
            provider_body/provider_body-<n>.asz, provider_index/..., transcripts/s-<16 hex>/...
            transcripts/transcript-<n>.asz     a transcript pack: windows of several streams

Names starting with ``_`` at the root are never sessions. ``<seq>`` is eight or more decimal
digits; sequence numbers are per session, shared by every kind of landed file, and never go
back. ``s-<16 hex>`` is the start of the SHA-256 of the source's path under Claude Code's
projects directory. A landed file is written once under a temporary name (``.tmp-*``), read
back, flushed and published without replacing anything; it is never changed after. Derived
files are rebuilt from the landed files whenever they are missing or do not match them. A
generation (``asz.store._generation``) replaces a session's files numbered up to its ``<seq>``
as a whole, once its manifest is published; a later *revision* ``<rev>`` of the same numbers
replaces it in turn (no suffix: revision 0).
"""

from asz.bodykeys import BodyKeys
from asz.store._backend import Backend, Entry, LocalBackend, RefusesLanding, TempFile
from asz.store._bodies import BodyLander, IncomingBody
from asz.store._bodyparts import BodyParts
from asz.store._codec import Record, Repeat, SessionBodies, common_prefix
from asz.store._derived import DerivedFile, Kept
from asz.store._errors import (
    AmbiguousId,
    BodyNotFound,
    DamagedTranscript,
    Problem,
    StorageUnavailable,
    StoreError,
    TranscriptNotFound,
    UnknownSession,
)
from asz.store._framing import (
    MAX_CONTENT_BYTES,
    LandedFile,
    LandedFileError,
    LandedRecord,
    decode_file,
)
from asz.store._generation import (
    MAX_MANIFEST_BYTES,
    Generation,
    GenerationError,
    GenerationWriter,
    PreparedFile,
    decode_generation,
    publish_generation,
    remove_unpublished,
)
from asz.store._held import HeldBodies
from asz.store._layout import (
    ANALYTICS_DIR,
    ANALYTICS_LOCK_FILE,
    BODY_KIND,
    CURSOR_FILE,
    EXPORT_CURSORS_DIR,
    EXPORT_LOCK_FILE,
    EXTENT_PREFIX,
    INDEX_KIND,
    KINDS,
    PROVIDER_INDEX_STATE_FILE,
    PROVIDER_LEDGER_FILE,
    PUSH_LOCK_FILE,
    PUSH_RECORD_FILE,
    PUSH_SNAPSHOT_FILE,
    REDACT_KEY_FILE,
    REDACTED_DIR,
    ROOT_ID_FILE,
    SEQ_FILE,
    SESSION_LIST_FILE,
    STATE_DIR,
    TRANSCRIPT_KIND,
    GenerationId,
    LandedName,
    NotASession,
    extent_path,
    facts_path,
    index_dir,
    is_stream_key,
    landed_name,
    parse_extent,
    parse_generation_dir,
    parse_generation_file,
    parse_landed,
    redactions_path,
    report_path,
    stream_dir,
    stream_key,
)
from asz.store._manifest import MAX_BODY, MAX_DEPTH, CodecError
from asz.store._manifest_index import BodyManifest
from asz.store._moves import SessionMoved
from asz.store._repack import (
    REPACK_LEVELS,
    RepackBusy,
    RepackOutcome,
    budgets_of,
    landed_at,
    quiet_for,
    repack_lock,
    repack_session,
)
from asz.store._resolve import MIN_PREFIX, SHOWN_PREFIX, unique_prefixes
from asz.store._root import Busy, Root, UnsafeRoot, collector_lock, landing_lock, state_lock
from asz.store._scan import NotCuttable, array_items_from, message_spans
from asz.store._session import IndexLine, Session
from asz.store._session_facts import (
    CallFact,
    FactsBuilder,
    SessionFacts,
    open_facts,
    save_facts,
)
from asz.store._store import Store, open_store
from asz.store._streams import (
    APPEND,
    MAIN_STREAM,
    PACK_STREAMS,
    SNAPSHOT,
    Fresh,
    LandedWindow,
    StreamReader,
    TranscriptLine,
    windows_of,
)
from asz.store._summary import SessionSummary
from asz.store._verify import VerifyReport, check_derived
from asz.store._writer import Batch, Landed, ReadBackError, SessionWriter

__all__ = [
    "ANALYTICS_DIR",
    "ANALYTICS_LOCK_FILE",
    "APPEND",
    "BODY_KIND",
    "CURSOR_FILE",
    "EXPORT_CURSORS_DIR",
    "EXPORT_LOCK_FILE",
    "EXTENT_PREFIX",
    "INDEX_KIND",
    "KINDS",
    "MAIN_STREAM",
    "MAX_BODY",
    "MAX_CONTENT_BYTES",
    "MAX_DEPTH",
    "MAX_MANIFEST_BYTES",
    "MIN_PREFIX",
    "PACK_STREAMS",
    "PROVIDER_INDEX_STATE_FILE",
    "PROVIDER_LEDGER_FILE",
    "PUSH_LOCK_FILE",
    "PUSH_RECORD_FILE",
    "PUSH_SNAPSHOT_FILE",
    "REDACTED_DIR",
    "REDACT_KEY_FILE",
    "REPACK_LEVELS",
    "ROOT_ID_FILE",
    "SEQ_FILE",
    "SESSION_LIST_FILE",
    "SHOWN_PREFIX",
    "SNAPSHOT",
    "STATE_DIR",
    "TRANSCRIPT_KIND",
    "AmbiguousId",
    "Backend",
    "Batch",
    "BodyKeys",
    "BodyLander",
    "BodyManifest",
    "BodyNotFound",
    "BodyParts",
    "Busy",
    "CallFact",
    "CodecError",
    "DamagedTranscript",
    "DerivedFile",
    "Entry",
    "FactsBuilder",
    "Fresh",
    "Generation",
    "GenerationError",
    "GenerationId",
    "GenerationWriter",
    "HeldBodies",
    "IncomingBody",
    "IndexLine",
    "Kept",
    "Landed",
    "LandedFile",
    "LandedFileError",
    "LandedName",
    "LandedRecord",
    "LandedWindow",
    "LocalBackend",
    "NotASession",
    "NotCuttable",
    "PreparedFile",
    "Problem",
    "ReadBackError",
    "Record",
    "RefusesLanding",
    "RepackBusy",
    "RepackOutcome",
    "Repeat",
    "Root",
    "Session",
    "SessionBodies",
    "SessionFacts",
    "SessionMoved",
    "SessionSummary",
    "SessionWriter",
    "StorageUnavailable",
    "Store",
    "StoreError",
    "StreamReader",
    "TempFile",
    "TranscriptLine",
    "TranscriptNotFound",
    "UnknownSession",
    "UnsafeRoot",
    "VerifyReport",
    "array_items_from",
    "budgets_of",
    "check_derived",
    "collector_lock",
    "common_prefix",
    "decode_file",
    "decode_generation",
    "extent_path",
    "facts_path",
    "index_dir",
    "is_stream_key",
    "landed_at",
    "landed_name",
    "landing_lock",
    "message_spans",
    "open_facts",
    "open_store",
    "parse_extent",
    "parse_generation_dir",
    "parse_generation_file",
    "parse_landed",
    "publish_generation",
    "quiet_for",
    "redactions_path",
    "remove_unpublished",
    "repack_lock",
    "repack_session",
    "report_path",
    "save_facts",
    "state_lock",
    "stream_dir",
    "stream_key",
    "unique_prefixes",
    "windows_of",
]
