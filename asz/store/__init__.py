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
        archive-pushed.jsonl                   what asz push sent to the team archive
        archive-push.lock                      one push at a time (flock)
        otlp/<endpoint digest>/<session>.json  what asz export otlp sent to an OTLP endpoint
        otlp-export.lock                       one export at a time (flock)
        root-id                                the root's random id (analytics file names)
        analytics/<target digest>.json         what asz export parquet wrote to a target
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

Names starting with ``_`` at the root are never sessions. ``<seq>`` is eight or more decimal
digits; sequence numbers are per session, shared by every kind of landed file, and never go
back. ``s-<16 hex>`` is the start of the SHA-256 of the source's path under Claude Code's
projects directory. A landed file is written once under a temporary name (``.tmp-*``), read
back, flushed and published without replacing anything; it is never changed after. Derived
files are rebuilt from the landed files whenever they are missing or do not match them.
"""

from asz.bodykeys import BodyKeys
from asz.store.backend import Backend, Entry, LocalBackend, TempFile
from asz.store.bodyparts import BodyParts
from asz.store.derived import DerivedFile, Kept
from asz.store.errors import (
    AmbiguousId,
    BodyNotFound,
    DamagedTranscript,
    Problem,
    StorageUnavailable,
    StoreError,
    TranscriptNotFound,
    UnknownSession,
)
from asz.store.framing import LandedFile, LandedFileError, LandedRecord
from asz.store.layout import (
    BODY_KIND,
    INDEX_KIND,
    KINDS,
    TRANSCRIPT_KIND,
    LandedName,
    NotASession,
)
from asz.store.manifest import CodecError
from asz.store.resolve import MIN_PREFIX, SHOWN_PREFIX, unique_prefixes
from asz.store.session import BodyManifest, IndexLine, Session
from asz.store.session_facts import CallFact, SessionFacts
from asz.store.store import Store, open_store
from asz.store.streams import (
    MAIN_STREAM,
    Fresh,
    LandedWindow,
    StreamReader,
    TranscriptLine,
)
from asz.store.summary import SessionSummary
from asz.store.verify import VerifyReport, check_derived
from asz.store.writer import Batch, Landed, ReadBackError, SessionWriter

__all__ = [
    "BODY_KIND",
    "INDEX_KIND",
    "KINDS",
    "MAIN_STREAM",
    "MIN_PREFIX",
    "SHOWN_PREFIX",
    "TRANSCRIPT_KIND",
    "AmbiguousId",
    "Backend",
    "Batch",
    "BodyKeys",
    "BodyManifest",
    "BodyNotFound",
    "BodyParts",
    "CallFact",
    "CodecError",
    "DamagedTranscript",
    "DerivedFile",
    "Entry",
    "Fresh",
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
    "Problem",
    "ReadBackError",
    "Session",
    "SessionFacts",
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
    "VerifyReport",
    "check_derived",
    "open_store",
    "unique_prefixes",
]
