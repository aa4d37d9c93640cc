"""The view document as a person reads it: the session, its streams, then its calls in time.

``asz view`` prints this, and the document itself with ``--json``; everything here is read
from the document (:func:`asz.view.build_view`), so the two never disagree. The calls of every
stream are merged in time with the compactions, since that is the order they happened in, and
each call lists the ids of its joined bodies on lines of their own. Times are in UTC unless
the caller names another zone (``asz view --local``), and the zone is said where they are.

Lines fit the width given, with one exception: nothing is ever cut. An id is what a person
copies into ``asz body``, and a path or a UUID cut in two pastes as two words, so text is
broken only at spaces and a piece wider than the terminal stays whole on its own line. A
call table too wide for the terminal moves its token counts to a line of their own.

Everything shown came from files Claude Code wrote, so control characters are shown escaped:
a transcript must not be able to move the cursor or clear the terminal it is read on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from asz.view.records import Epoch, ViewCall, ViewDocument
from asz.words import count
from asz.zones import IN_UTC, Zone

__all__ = ["escaped", "format_timeline"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_INDENT = "  "
_LABEL = 9
"""The width of the labels before a call's detail lines and the session's fields."""
_TITLES = ["#", "time", "stream", "model"]
_TOKENS = (
    ("input", "input_tokens"),
    ("cache read", "cache_read_input_tokens"),
    ("cache write", "cache_creation_input_tokens"),
    ("output", "output_tokens"),
)


def format_timeline(view: ViewDocument, width: int, zone: Zone = IN_UTC) -> str:
    """The whole view in lines no wider than ``width``, but for a piece that alone is wider;
    its times in ``zone``."""
    sections = [
        _session(view, width, zone),
        _streams(view, width, zone),
        _calls(view, width, zone),
        _unjoined(view, width),
        _problems(view, width),
    ]
    return "\n\n".join("\n".join(lines) for lines in sections if lines)


# -- the session --------------------------------------------------------------------------


def _session(view: ViewDocument, width: int, zone: Zone) -> list[str]:
    session = view["session"]
    counts = session["counts"]
    summary = view["summary"]
    directories = session["directories"]
    # A project directory's name is its working directory spelled as one name: shown only
    # when no line names a working directory.
    places = directories["cwds"] or directories["projects"]
    calls = f"{count(counts['calls'], 'call')} in {count(counts['streams'], 'stream')}"
    if counts["synthetic_calls"]:
        calls += f" ({counts['synthetic_calls']} synthetic)"
    if counts["epochs"]:
        calls += f", {count(counts['epochs'], 'compaction')}"
    landed = f"{count(counts['lines'], 'transcript line')}, no provider body"
    joined = ""
    if summary["bodies_landed"]:
        landed = (
            f"{count(summary['bodies_landed'], 'body')} ({count(counts['requests'], 'request')}"
            f", {count(counts['responses'], 'response')}), "
            f"{count(counts['lines'], 'transcript line')}"
        )
        joined = (
            f"{count(summary['requests_joined'], 'request')} and "
            f"{count(summary['responses_joined'], 'response')}; "
            f"{count(summary['calls_with_both'], 'call')} with both"
        )
    fields = [
        # A path is one piece, spaces and all, so that it is never broken over two lines.
        ("project", _listed([escaped(place) for place in places]) or ["unknown"]),
        ("time", _pieces(_span(session["first_time"], session["last_time"], zone))),
        ("models", _pieces(", ".join(escaped(model) for model in session["models"]) or "none")),
        ("calls", _pieces(calls)),
        ("landed", _pieces(landed)),
        ("joined", _pieces(joined)),
    ]
    lines = [f"session {session['id']}"]
    for label, pieces in fields:
        if pieces:
            lines += _pack(f"{_INDENT}{label:<{_LABEL}}", pieces, width, _INDENT + " " * _LABEL)
    return lines


def _span(first: object, last: object, zone: Zone) -> str:
    start, end = zone.moment(first), zone.moment(last)
    if start is None or end is None:
        return "unknown"
    to = f"{end:%H:%M:%S}" if end.date() == start.date() else _stamp(end)
    return f"{_stamp(start)} to {to} {zone.label} ({_duration((end - start).total_seconds())})"


# -- streams ------------------------------------------------------------------------------


def _streams(view: ViewDocument, width: int, zone: Zone) -> list[str]:
    numbers = {call["message_id"]: call["n"] for call in view["calls"]}
    rows = [
        [
            escaped(stream["id"]),
            count(stream["calls"], "call"),
            count(stream["lines"], "line"),
            _span_short(stream["first_time"], stream["last_time"], zone),
        ]
        for stream in view["streams"]
    ]
    widths = _widths(rows)
    lines = ["streams"]
    for stream, row in zip(view["streams"], rows, strict=True):
        notes = []
        started = stream["started_by"]
        if started is not None:
            n = numbers.get(started["message_id"])
            notes.append(
                f"started by call {n}"
                if n is not None
                else f"started in {escaped(started['stream'])}"
            )
        if stream["gap"] is not None:
            notes.append(f"has a gap: {escaped(stream['gap'])}")
        line = f"{_INDENT}{_row(row, widths, {1, 2})}".rstrip()
        if len(line) > width:
            # Too narrow for the columns: the stream's id, then what it says, as prose.
            line, notes = f"{_INDENT}{row[0]}", _listed([part for part in row[1:] if part] + notes)
        lines += _pack(line + "  ", notes, width, _INDENT * 2)
    return lines


def _span_short(first: object, last: object, zone: Zone) -> str:
    start, end = zone.moment(first), zone.moment(last)
    if start is None or end is None:
        return ""
    return f"{start:%H:%M:%S} to {end:%H:%M:%S}"


# -- calls --------------------------------------------------------------------------------


_WIDE, _NARROW, _TALL = "wide", "narrow", "tall"
"""The call table's layouts, widest first; the first that fits the terminal is used. Wide has
a column per token count; narrow puts the counts on a line under the call; tall keeps only
#, time and stream in the table and puts the model there too."""


@dataclass(frozen=True, slots=True)
class _Item:
    """A call, or a compaction, where it falls in time."""

    when: float | None
    """Seconds since the epoch; None when the document gives no time."""
    order: int
    cells: list[str]
    """#, time, stream, model and stop reason for a call; #, time and stream otherwise."""
    tokens: list[str] | None
    """The call's four token counts (empty without a joined response); None for a
    compaction."""
    text: str = ""
    """What a compaction says after its stream."""
    details: tuple[tuple[str, list[str]], ...] = ()
    """(label, pieces) lines under a call: its bodies' ids, or why it has none."""

    def shaped(self, layout: str, stop: bool) -> tuple[list[str], list[tuple[str, list[str]]]]:
        """The cells of the item's row in ``layout`` (with a stop column when ``stop``), and
        the lines under it."""
        if self.tokens is None:
            return self.cells, []
        n, time, stream, model, reason = self.cells
        stops = [reason] if stop else []
        if layout == _WIDE:
            tokens = self.tokens or ["-"] * len(_TOKENS)
            return [n, time, stream, model, *tokens, *stops], list(self.details)
        lines = list(self.details)
        if self.tokens:
            pairs = zip(_TOKENS, self.tokens, strict=True)
            lines.insert(
                0, ("tokens", _listed([f"{title} {value}" for (title, _), value in pairs]))
            )
        if layout == _NARROW:
            return [n, time, stream, model, *stops], lines
        ended = [f"(stop: {reason})"] if reason != "-" else []
        return [n, time, stream], [("model", [model, *ended]), *lines]


def _head(layout: str, stop: bool) -> tuple[list[str], set[int]]:
    """The titles of ``layout``'s columns, and which of them are numbers."""
    stops = ["stop"] if stop else []
    if layout == _WIDE:
        return [*_TITLES, *(title for title, _ in _TOKENS), *stops], {0, 4, 5, 6, 7}
    if layout == _NARROW:
        return [*_TITLES, *stops], {0}
    return _TITLES[:3], {0}


def _calls(view: ViewDocument, width: int, zone: Zone) -> list[str]:
    bodies = view["summary"]["bodies_landed"] > 0
    items = [_call_item(call, order, bodies, zone) for order, call in enumerate(view["calls"])]
    start = len(items)
    epochs = enumerate(view["epochs"])
    items += [_epoch_item(epoch, start + order, zone) for order, epoch in epochs]
    if not items:
        return ["calls", f"{_INDENT}none: no transcript line of this session is a model call"]
    # An item without a time keeps its place in the document, after those that have one.
    items.sort(key=lambda item: (item.when is None, item.when or 0.0, item.order))
    calls = [item for item in items if item.tokens is not None]
    stop = any(item.cells[4] != "-" for item in calls)
    layouts = [_WIDE, _NARROW, _TALL] if any(item.tokens for item in calls) else [_NARROW, _TALL]
    for layout in layouts:
        head, numbers = _head(layout, stop)
        rows = [head, *(item.shaped(layout, stop)[0] for item in items)]
        widths = _widths(rows)
        shown = [head, *(item.shaped(layout, stop)[0] for item in calls)]
        if max(len(_INDENT + _row(row, widths, numbers)) for row in shown) <= width:
            break
    under = _INDENT + " " * (widths[0] + 2)
    lines = [f"calls (times in {zone.said})"]
    if not bodies:
        said = "no provider body of this session landed: what follows is its transcripts alone"
        lines += _pack(_INDENT, _pieces(said), width, _INDENT)
    lines.append(f"{_INDENT}{_row(head, widths, numbers)}".rstrip())
    days = {_day(item.when, zone) for item in items if item.when is not None}
    day = None
    for item in items:
        if len(days) > 1 and item.when is not None and _day(item.when, zone) != day:
            day = _day(item.when, zone)
            lines.append(_INDENT + day)
        cells, details = item.shaped(layout, stop)
        line = f"{_INDENT}{_row(cells, widths, numbers)}"
        if item.tokens is None:
            lines += _compaction(line, item, width, under)
            continue
        lines.append(line.rstrip())
        for label, pieces in details:
            first = f"{under}{label:<{_LABEL}} "
            lines += _pack(first, pieces, width, under + " " * (_LABEL + 1))
    return lines


def _compaction(aligned: str, item: _Item, width: int, under: str) -> list[str]:
    """A compaction's line: its text in the model's column when it fits there, else right
    after its stream (``under`` is the blank of the # column)."""
    if len(f"{aligned}  {item.text}") <= width:
        return [f"{aligned}  {item.text}"]
    prefix = f"{under}{item.cells[1]}  {item.cells[2]}  "
    return _pack(prefix, _pieces(item.text), width, under)


def _call_item(call: ViewCall, order: int, bodies: bool, zone: Zone) -> _Item:
    """A call; ``bodies``: the session has landed bodies, so a call without one says so."""
    usage = call["usage"] if isinstance(call["usage"], dict) else None
    details = [(escaped(body["role"]), [escaped(body["id"])]) for body in call["provider_bodies"]]
    if call["synthetic"]:
        details.append(("synthetic", _pieces("written by Claude Code, never sent")))
    elif bodies and not details:
        details.append(("no body", _pieces("no landed body is joined to this call")))
    cells = [
        str(call["n"]),
        _clock(call["time"], zone),
        escaped(call["stream"]),
        _maybe(call["model"]),
        _maybe(call["stop_reason"]),
    ]
    tokens = [_number(usage.get(key)) for _, key in _TOKENS] if usage is not None else []
    return _Item(_when(call["time"]), order, cells, tokens, details=tuple(details))


def _epoch_item(epoch: Epoch, order: int, zone: Zone) -> _Item:
    said = [] if epoch["trigger"] is None else [escaped(epoch["trigger"])]
    if isinstance(epoch["pre_tokens"], int):
        said.append(f"{epoch['pre_tokens']:,} tokens before")
    text = f"compaction ({', '.join(said)})" if said else "compaction"
    cells = ["", _clock(epoch["time"], zone), escaped(epoch["stream"])]
    return _Item(_when(epoch["time"]), order, cells, None, text=text)


# -- what did not join, and what did not read ---------------------------------------------


def _unjoined(view: ViewDocument, width: int) -> list[str]:
    unjoined = view["summary"]["unjoined"]
    if not unjoined:
        return []
    lines = [f"bodies joined to no call ({len(unjoined)})"]
    for body in unjoined:
        lines.append(f"{_INDENT}{escaped(body['id'])}")
        why = f"{escaped(body['reason'])}: {escaped(body['detail'])}"
        lines += _pack(_INDENT * 3, _pieces(why), width, _INDENT * 3)
    return lines


def _problems(view: ViewDocument, width: int) -> list[str]:
    """Only how many: ``asz view`` says each problem on stderr, once."""
    problems = view["problems"]
    if not problems:
        return []
    said = (
        f"{count(len(problems), 'problem')} met reading this session (on stderr, and in "
        "--json): what is above is what did read"
    )
    return _pack("", _pieces(said), width, "")


# -- layout -------------------------------------------------------------------------------


def _pack(first: str, pieces: list[str], width: int, rest: str) -> list[str]:
    """``first`` followed by ``pieces``, a space between two, on lines no wider than
    ``width``. A piece that does not fit starts a line of its own after ``rest``, unless it
    would not fit there either and is the first after ``first``; no piece is ever broken."""
    lines = [first]
    for n, piece in enumerate(pieces):
        line = lines[-1]
        joined = line + piece if not line.strip() or line.endswith(" ") else f"{line} {piece}"
        hopeless = n == 0 and len(rest + piece) > width
        if len(joined) <= width or hopeless or not line.strip():
            lines[-1] = joined
        else:
            lines.append(rest + piece)
    return [line.rstrip() for line in lines]


def _pieces(text: str) -> list[str]:
    return [piece for piece in text.split(" ") if piece]


def _listed(pieces: list[str]) -> list[str]:
    """The pieces of a list, each but the last followed by a comma."""
    return [f"{piece}," for piece in pieces[:-1]] + pieces[-1:]


def _widths(rows: list[list[str]]) -> list[int]:
    """The width of each column: its widest cell, in whichever rows have one."""
    columns = max(len(row) for row in rows)
    return [max(len(row[i]) for row in rows if i < len(row)) for i in range(columns)]


def _row(cells: list[str], widths: list[int], numbers: set[int]) -> str:
    """The cells padded to their columns, those in ``numbers`` aligned right."""
    return "  ".join(
        cell.rjust(widths[i]) if i in numbers else cell.ljust(widths[i])
        for i, cell in enumerate(cells)
    )


# -- values -------------------------------------------------------------------------------


def escaped(value: object) -> str:
    """A value from Claude Code's files, with control characters escaped."""
    text = value if isinstance(value, str) else str(value)
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


def _maybe(value: object) -> str:
    return "-" if value is None else escaped(value)


def _number(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else "-"


def _when(value: object) -> float | None:
    moment = IN_UTC.moment(value)
    return None if moment is None else moment.timestamp()


def _day(when: float, zone: Zone) -> str:
    return zone.of(when).date().isoformat()


def _clock(value: object, zone: Zone) -> str:
    moment = zone.moment(value)
    return "-" if moment is None else f"{moment:%H:%M:%S}"


def _stamp(when: datetime) -> str:
    return f"{when:%Y-%m-%d %H:%M:%S}"


def _duration(seconds: float) -> str:
    total = max(int(seconds), 0)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"
