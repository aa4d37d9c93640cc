"""The SVG drawings of the pages, as geometry computed here and drawn by the templates.

Charts are server-rendered SVG: no script, no inline style (the Content-Security-Policy
forbids both), colours from the stylesheet by class, and each bar's figures in its
``<title>``, which a browser shows on hover.
"""

from __future__ import annotations

from dataclasses import dataclass

from asz.web.request import Weight
from asz.web.timeline import CallRow, CompactionRow

__all__ = [
    "BAR",
    "BREAK_MARK",
    "GAP",
    "HEIGHT",
    "MAX_BARS",
    "Bar",
    "Chart",
    "Mark",
    "Slice",
    "cache_chart",
    "weight_bar",
]

BAR = 6
GAP = 1
HEIGHT = 200
BREAK_MARK = 8
"""The room each break's mark takes above its bar (a 6 by 6 square and a gap)."""
MAX_BARS = 120
"""Bars a chart draws at most: past this, consecutive calls share a bar, so that a bar stays
wide enough to see and to hover on a laptop's screen (a thousand calls as 1 px bars showed
nothing), and every break keeps a mark of its own."""


@dataclass(frozen=True, slots=True)
class Mark:
    """A break's mark above its bar: one per break, each a link to its call."""

    call: CallRow
    y: float


@dataclass(frozen=True, slots=True)
class Bar:
    """One call, or a run of consecutive calls past ``MAX_BARS``, stacked: read, written, and
    written by the calls that broke the cache."""

    calls: list[CallRow]
    x: int
    read: int
    written: int
    broke_written: int
    read_y: float
    read_height: float
    written_y: float
    written_height: float
    broke_y: float
    broke_height: float
    marks: list[Mark]

    @property
    def call(self) -> CallRow:
        """The call the bar links to: its first."""
        return self.calls[0]


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    compactions: list[int]
    """The x of each compaction's line, between the calls around it."""
    top: int
    """The token count the chart's height stands for."""
    per_bar: int
    """Calls a bar stands for (1 unless the session has more than ``MAX_BARS``)."""


def cache_chart(items: list[CallRow | CompactionRow]) -> Chart:
    """Cache read and cache written per call (or per run of calls), stacked, in time, with a
    mark above the bar for each call that broke the cache."""
    calls = sum(isinstance(item, CallRow) for item in items)
    per_bar = max(1, -(-calls // MAX_BARS))
    runs: list[list[CallRow]] = []
    compactions: list[int] = []
    for item in items:
        if isinstance(item, CompactionRow):
            compactions.append(max(0, len(runs) * (BAR + GAP) - 1))
        elif runs and len(runs[-1]) < per_bar and not _compaction_since(compactions, runs):
            runs[-1].append(item)
        else:
            runs.append([item])
    top = max((sum(_tokens(run)[:2]) for run in runs), default=0) or 1
    room = HEIGHT - 2 - BREAK_MARK * min(12, max((_breaks(run) for run in runs), default=0))
    scale = room / top
    bars = [_bar(run, n * (BAR + GAP), scale) for n, run in enumerate(runs)]
    return Chart(max(1, len(bars) * (BAR + GAP)), HEIGHT, bars, compactions, top, per_bar)


def _compaction_since(compactions: list[int], runs: list[list[CallRow]]) -> bool:
    """Whether a compaction's line was drawn after the last run began (a run never spans
    one, so the line stays between the calls around it)."""
    return bool(compactions) and compactions[-1] >= (len(runs) - 1) * (BAR + GAP)


def _tokens(run: list[CallRow]) -> tuple[int, int, int]:
    read = sum(call.read or 0 for call in run)
    written = sum(call.written or 0 for call in run)
    broke = sum(call.written or 0 for call in run if call.broke)
    return read, written, broke


def _breaks(run: list[CallRow]) -> int:
    return sum(call.broke for call in run)


def _bar(run: list[CallRow], x: int, scale: float) -> Bar:
    read, written, broke = _tokens(run)
    read_height = read * scale
    written_height = (written - broke) * scale
    broke_height = broke * scale
    read_y = HEIGHT - read_height
    written_y = read_y - written_height
    broke_y = written_y - broke_height
    marks = []
    y = broke_y
    for call in run:
        if call.broke:
            y = max(0.0, y - BREAK_MARK)
            marks.append(Mark(call, y))
    return Bar(
        run,
        x,
        read,
        written,
        broke,
        read_y,
        read_height,
        written_y,
        written_height,
        broke_y,
        broke_height,
        marks,
    )


@dataclass(frozen=True, slots=True)
class Slice:
    weight: Weight
    x: float
    width: float
    share: float


def weight_bar(weights: list[Weight], width: int = 1000) -> list[Slice]:
    """Each part's slice of a bar ``width`` wide, in order."""
    total = sum(weight.size for weight in weights) or 1
    slices = []
    x = 0.0
    for weight in weights:
        share = weight.size / total
        slices.append(Slice(weight, x, share * width, share))
        x += share * width
    return slices
