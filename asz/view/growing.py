"""A session's cache figures kept up to date as its transcripts grow, line by line.

``asz statusline`` runs after every message Claude Code writes and must not read the whole
session each time, so it folds each new transcript line into figures it keeps between runs.
The figures are those of the cache report (``docs/view.md``) found from usage alone: the
calls, their tokens, the hit ratio, the breaks the usage invariant finds
(:class:`asz.view.usage.StreamBreaks`) and what the calls cost and the breaks wasted
(:mod:`asz.view.prices`). A call is every assistant line of one ``message.id`` in its
stream; its model is its first line's and its usage its last line's, as
:mod:`asz.view.calls` reads them. A stream's calls are written one after the other, so a call
is closed when the next one starts (or a compaction does); the last, still open, call is
counted in what is shown but folded only once the next starts, since more of its lines may
come. A late line of the call closed last is not taken for a new call (Claude Code writes a
call's lines together; none of the sample transcripts interleaves two calls of a stream).

Everything here is kept as plain JSON values (:meth:`SessionFold.state`), so the statusline
saves it between runs and goes on from where it stopped.
"""

from __future__ import annotations

from typing import Any

import orjson

from asz.synthetic import SYNTHETIC_MODEL
from asz.view.evidence import Seen, StreamEvidence, seen_on_line, strongest
from asz.view.prices import DIGITS, PriceTable, cost_usd, waste_usd, writes
from asz.view.usage import StreamBreaks, Usage, hit_ratio

__all__ = ["StreamFold", "Totals", "session_totals"]

_WORTH_PARSING = (b"assistant", b"compact_boundary")
"""A line holding neither is none of the lines the figures need: it is not parsed."""
_MAX_UNPRICED = 8
_COUNTS = (
    "calls",
    "input",
    "output",
    "cache_read",
    "cache_creation",
    "cache_write_5m",
    "cache_write_1h",
    "breaks",
    "rewritten_tokens",
)


class Totals:
    """What a stream's closed calls add up to (a session's: every stream's)."""

    __slots__ = ("cost_usd", "counts", "last_break", "last_call", "unpriced", "waste_usd")

    def __init__(self) -> None:
        self.counts = dict.fromkeys(_COUNTS, 0)
        self.cost_usd = 0.0
        self.waste_usd = 0.0
        self.unpriced: list[str] = []
        """Models with no price (a few, named once each): their calls cost nothing here."""
        self.last_break: dict[str, Any] | None = None
        """The latest call that re-wrote the cache: ``message_id``, ``time``, ``stream``,
        ``rewritten_tokens``, ``waste_usd``."""
        self.last_call: dict[str, Any] | None = None
        """The latest call: ``message_id``, ``time``, ``stream``."""

    def add(self, other: Totals) -> None:
        for key, value in other.counts.items():
            self.counts[key] += value
        self.cost_usd = round(self.cost_usd + other.cost_usd, DIGITS)
        self.waste_usd = round(self.waste_usd + other.waste_usd, DIGITS)
        for model in other.unpriced:
            self._unpriced(model)
        self.last_break = _later(self.last_break, other.last_break)
        self.last_call = _later(self.last_call, other.last_call)

    def call(
        self,
        call: dict[str, Any],
        stream: str,
        breaks: StreamBreaks,
        prices: PriceTable,
        evidence: StreamEvidence,
    ) -> None:
        """Counts one closed, non-synthetic call, told to ``breaks`` in its stream's order; a
        break is named from ``evidence`` (what the lines and usage say, see
        :mod:`asz.view.evidence`)."""
        usage = Usage.of(call.get("usage"))
        expected = breaks.expected_read
        expectation = breaks.call(usage)
        price = prices.price_of(call.get("model"))
        counts = self.counts
        counts["calls"] += 1
        seen = {"message_id": call["message_id"], "time": call.get("time"), "stream": stream}
        self.last_call = _later(self.last_call, seen)
        if usage is not None:
            write_5m, write_1h = writes(usage)
            counts["input"] += usage.input or 0
            counts["output"] += usage.output or 0
            counts["cache_read"] += usage.cache_read or 0
            counts["cache_creation"] += usage.cache_creation or 0
            counts["cache_write_5m"] += write_5m
            counts["cache_write_1h"] += write_1h
            if price is None:
                self._unpriced(call.get("model") or "(no model)")
        cost = cost_usd(usage, price)
        if cost is not None:
            self.cost_usd = round(self.cost_usd + cost, DIGITS)
        rewritten = expectation.rewritten_tokens
        if rewritten:
            waste = waste_usd(rewritten, usage, price)
            counts["breaks"] += 1
            counts["rewritten_tokens"] += rewritten
            if waste is not None:
                self.waste_usd = round(self.waste_usd + waste, DIGITS)
            named = strongest(evidence.named(call, usage, expected))
            self.last_break = _later(
                self.last_break,
                {
                    **seen,
                    "rewritten_tokens": rewritten,
                    "waste_usd": waste,
                    "cause": named.cause if named else None,
                    "detail": named.detail if named else None,
                },
            )

    def _unpriced(self, model: str) -> None:
        if model not in self.unpriced and len(self.unpriced) < _MAX_UNPRICED:
            self.unpriced.append(model)

    @property
    def hit_ratio(self) -> float | None:
        """Tokens read from the cache over every prompt token, as the cache report says it."""
        counts = self.counts
        return hit_ratio(counts["cache_read"], counts["cache_creation"], counts["input"])

    def state(self) -> dict[str, Any]:
        return {
            "counts": self.counts,
            "cost_usd": self.cost_usd,
            "waste_usd": self.waste_usd,
            "unpriced": self.unpriced,
            "last_break": self.last_break,
            "last_call": self.last_call,
        }

    @classmethod
    def of_state(cls, value: dict[str, Any]) -> Totals:
        totals = cls()
        totals.counts.update({key: int(value["counts"][key]) for key in _COUNTS})
        totals.cost_usd = float(value["cost_usd"])
        totals.waste_usd = float(value["waste_usd"])
        totals.unpriced = [str(model) for model in value["unpriced"]][:_MAX_UNPRICED]
        totals.last_break = _moment(value["last_break"])
        totals.last_call = _moment(value["last_call"])
        return totals


class StreamFold:
    """One stream's figures so far, fed its lines in order."""

    __slots__ = ("breaks", "closed", "evidence", "name", "open", "totals", "unreadable")

    def __init__(self, name: str) -> None:
        self.name = name
        self.breaks = StreamBreaks()
        self.evidence = StreamEvidence()
        self.totals = Totals()
        self.open: dict[str, Any] | None = None
        """The call whose lines may still be coming: ``message_id``, ``usage``,
        ``synthetic``, what its lines say of it (:class:`asz.view.evidence.Seen`) and its
        ``speed``."""
        self.closed = ""
        """The message id of the call closed last, whose late lines are not counted again."""
        self.unreadable = 0
        """Lines read that were not JSON objects (a line still being written is not read)."""

    def line(self, raw: bytes, prices: PriceTable) -> None:
        """Folds one complete transcript line (without its newline)."""
        if not any(word in raw for word in _WORTH_PARSING):
            return
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            self.unreadable += 1
            return
        if not isinstance(value, dict):
            return
        kind = value.get("type")
        if kind == "assistant":
            self._assistant(value, prices)
        elif kind == "system" and value.get("subtype") == "compact_boundary":
            self._close(prices)
            self.breaks.restart()

    def _assistant(self, value: dict[str, Any], prices: PriceTable) -> None:
        message = value.get("message")
        if not isinstance(message, dict):
            return
        message_id = _text(message.get("id"))
        if message_id is None or message_id == self.closed:
            return
        model = _text(message.get("model"))
        call = self.open
        if call is None or call["message_id"] != message_id:
            self._close(prices)
            call = self.open = {
                **dict.fromkeys(Seen.__slots__),
                "message_id": message_id,
                "model": model,
                "time": _text(value.get("timestamp")),
                "usage": None,
                "synthetic": False,
                "speed": None,
            }
        call["synthetic"] = call["synthetic"] or model == SYNTHETIC_MODEL
        call["last_time"] = _text(value.get("timestamp")) or call["last_time"]
        for key, said in seen_on_line(value, message).items():
            if said is not None:
                call[key] = said
        usage = message.get("usage")
        if isinstance(usage, dict):
            call["usage"] = usage
            call["speed"] = usage.get("speed")

    def _close(self, prices: PriceTable) -> None:
        call = self.open
        if call is None:
            return
        self.open = None
        self.closed = call["message_id"]
        if not call["synthetic"]:
            start = self.breaks.expected_read is None
            self.totals.call(call, self.name, self.breaks, prices, self.evidence)
            self.evidence.advance(call, Usage.of(call.get("usage")), start)

    def shown(self, prices: PriceTable) -> Totals:
        """The stream's figures with its open call counted, leaving the fold as it is."""
        shown = Totals()
        shown.add(self.totals)
        call = self.open
        if call is not None and not call["synthetic"]:
            breaks = StreamBreaks(self.breaks.expected_read)
            shown.call(call, self.name, breaks, prices, self.evidence)
        return shown

    def state(self) -> dict[str, Any]:
        return {
            "expected_read": self.breaks.expected_read,
            "totals": self.totals.state(),
            "open": self.open,
            "closed": self.closed,
            "unreadable": self.unreadable,
            "evidence": self.evidence.state(),
        }

    @classmethod
    def of_state(cls, name: str, value: dict[str, Any]) -> StreamFold:
        """The fold a :meth:`state` was taken of; KeyError, TypeError or ValueError when the
        value is not one."""
        fold = cls(name)
        expected = value["expected_read"]
        fold.breaks = StreamBreaks(None if expected is None else int(expected))
        fold.totals = Totals.of_state(value["totals"])
        found = value["open"]
        if found is not None and not isinstance(found.get("message_id"), str):
            raise ValueError("an open call names no message")
        fold.open = dict(found) if found is not None else None
        fold.closed = str(value["closed"])
        fold.unreadable = int(value["unreadable"])
        fold.evidence = StreamEvidence.of_state(value.get("evidence"))
        return fold


def session_totals(streams: dict[str, StreamFold], prices: PriceTable) -> Totals:
    """Every stream's figures, open calls counted, as one."""
    found = Totals()
    for stream in streams.values():
        found.add(stream.shown(prices))
    return found


def _later(one: dict[str, Any] | None, other: dict[str, Any] | None) -> dict[str, Any] | None:
    """The later of two calls by their first line's time (an ISO time, compared as text, as
    the view orders them); the second on a tie, since it was read last."""
    if one is None:
        return other
    if other is None:
        return one
    return one if (one.get("time") or "") > (other.get("time") or "") else other


def _moment(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("message_id"), str):
        raise ValueError("a call in the state names no message")
    return value


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
