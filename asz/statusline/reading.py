"""One run of the status line: the session's transcripts folded on from the kept state, the
last break's cause looked up when it is not known yet, and the state kept for the next run."""

from __future__ import annotations

import os
import sys
import zlib
from datetime import datetime
from pathlib import Path
from typing import Any

from asz.config import Config
from asz.statusline.causes import kept_cause, should_ask
from asz.statusline.line import figures
from asz.statusline.state import load_state, save_state, state_dir, state_file
from asz.statusline.status_input import StatusInput
from asz.statusline.tail import MAIN_STREAM, advance, session_sources
from asz.view.growing import StreamFold, session_totals
from asz.view.prices import price_table

__all__ = ["READ_BUDGET", "read_session"]

READ_BUDGET = 64 << 20
"""Transcript bytes one run reads at most; a longer session is read over several runs (the
line says ``reading…`` meanwhile), so no run holds Claude Code's line up for long."""


def read_session(
    status: StatusInput, config: Config, *, now: float, today: datetime
) -> dict[str, Any]:
    """The figures of the session whose transcript ``status`` names (see
    :func:`asz.statusline.line.figures`); ``now`` is the time as ``time.time()`` says it,
    ``today`` as an aware datetime."""
    assert status.transcript_path is not None
    prices = price_table(config.prices)
    # The state is kept for one price table; a checksum names it (a digest would load
    # hashlib, a good part of the start, to guard against no one).
    fingerprint = f"{zlib.crc32(repr(prices.tables).encode()):08x}"
    transcript = Path(status.transcript_path)
    path = state_file(state_dir(os.environ), status.session_id)
    kept = load_state(path, str(transcript), fingerprint) or {}
    kept_sources = kept.get("sources")
    if not isinstance(kept_sources, dict):
        kept_sources = {}
    budget = READ_BUDGET
    sources: dict[str, Any] = {}
    streams: dict[str, StreamFold] = {}
    complete = True
    for source in session_sources(transcript):
        key = str(source.path)
        advanced = advance(source, kept_sources.get(key), prices, max(0, budget))
        if advanced.kept is None or advanced.fold is None:
            if source.stream == MAIN_STREAM:
                return {"status": "no_transcript"}
            continue
        budget -= advanced.read
        complete = complete and not advanced.behind
        sources[key] = advanced.kept
        streams[key] = advanced.fold
    totals = session_totals(streams, prices)
    state: dict[str, Any] = {
        "transcript": str(transcript),
        "prices": fingerprint,
        "sources": sources,
        "cause": kept.get("cause"),
        "asked": kept.get("asked"),
        "generation": kept.get("generation", -1),
    }
    last = totals.last_break
    cause = None
    if last is not None:
        cause = _cause(state, status.session_id, last["message_id"], config, now)
    if path is not None and state != {key: kept.get(key) for key in state}:
        try:
            save_state(path, state)
        except OSError as err:  # the line holds; the next run reads the session again
            print(f"asz statusline: cannot keep the state in {path}: {err}", file=sys.stderr)
    return figures(
        totals,
        session=status.session_id,
        cause=cause,
        now=today,
        complete=complete,
        claude_code_cost_usd=status.claude_code_cost_usd,
    )


def _cause(
    state: dict[str, Any], session: str | None, message_id: str, config: Config, now: float
) -> dict[str, Any] | None:
    """The cause of the break of ``message_id``: the one kept, else the kept report's when
    it is time to ask (recorded in ``state``)."""
    known: dict[str, Any] | None = state.get("cause")
    if isinstance(known, dict) and known.get("message_id") == message_id:
        return known
    if session is None or config.root_url or not should_ask(state.get("asked"), message_id, now):
        return None
    asked = state.get("asked")
    tries = asked.get("tries", 0) if isinstance(asked, dict) else 0
    if not isinstance(asked, dict) or asked.get("message_id") != message_id:
        tries = 0
    state["asked"] = {"message_id": message_id, "tries": tries + 1, "at": now}
    found = kept_cause(config.root, session, message_id)
    if found is None:
        return None
    cause = state["cause"] = {"message_id": message_id, **found}
    return cause
