"""The SVG drawings of the pages, as geometry computed here and drawn by the templates.

Charts are server-rendered SVG: no script, no inline style (the Content-Security-Policy
forbids both), colours from the stylesheet by class, and each bar's figures in its
``<title>``, which a browser shows on hover.
"""

from __future__ import annotations

from dataclasses import dataclass

from asz.web.request import Weight
from asz.web.timeline import CallRow, CompactionRow

BAR = 6
GAP = 1
HEIGHT = 200
BREAK_MARK = 8
"""The height of the mark above a bar whose call broke the cache."""


@dataclass(frozen=True, slots=True)
class Bar:
    call: CallRow
    x: int
    read_y: float
    read_height: float
    written_y: float
    written_height: float


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    compactions: list[int]
    """The x of each compaction's line, between the calls around it."""
    top: int
    """The token count the chart's height stands for."""


def cache_chart(items: list[CallRow | CompactionRow]) -> Chart:
    """Cache read and cache written per call, stacked, in time."""
    calls = [item for item in items if isinstance(item, CallRow)]
    top = max(((call.read or 0) + (call.written or 0) for call in calls), default=0) or 1
    scale = (HEIGHT - BREAK_MARK - 2) / top
    bars: list[Bar] = []
    compactions: list[int] = []
    for item in items:
        x = len(bars) * (BAR + GAP)
        if isinstance(item, CompactionRow):
            compactions.append(max(0, x - 1))
            continue
        read = (item.read or 0) * scale
        written = (item.written or 0) * scale
        bars.append(Bar(item, x, HEIGHT - read, read, HEIGHT - read - written, written))
    return Chart(max(1, len(bars) * (BAR + GAP)), HEIGHT, bars, compactions, top)


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
