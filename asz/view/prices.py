"""What calls cost and what their breaks wasted, from a price table per model.

The table shipped in ``prices.toml`` gives, per model, US dollars per million tokens of
input, output, cache reads, 5-minute cache writes and 1-hour cache writes, with the date and
the public page it was taken from. The config file's ``[prices."<model>"]`` tables come
before it. A model id takes the price of the key equal to it, else of the key it adds a date
suffix to (``claude-haiku-4-5-20251001`` is ``claude-haiku-4-5``); nothing else matches, so a
model the table does not name has no price and its costs are None, never guessed.

A call's cost is ``input * in + output * out + cache_read * read + write_5m * w5 +
write_1h * w1`` (per million); where ``usage`` gives no 5-minute/1-hour split, every cache
write counts as a 5-minute one. A break's waste is what its re-written tokens cost beyond
reading them: ``rewritten * (write - read)``, at the 1-hour write price when most of the
call's writes were 1-hour ones, else at the 5-minute price.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from asz.config import ModelPrice
from asz.config_file import model_prices
from asz.view.usage import Usage

__all__ = [
    "DIGITS",
    "MILLION",
    "PriceTable",
    "cost_usd",
    "price_table",
    "shipped_prices",
    "waste_usd",
    "writes",
]

_DATE_SUFFIX = re.compile(r"-\d{8}")
MILLION = 1_000_000
DIGITS = 6
"""Dollars are rounded to a millionth: well below a token's price, above float noise."""


@dataclass(frozen=True, slots=True)
class PriceTable:
    taken: str
    source: str
    tables: tuple[tuple[tuple[str, ModelPrice], ...], ...]
    """The overrides, then the shipped prices: the first table with a match wins."""
    _fingerprint: str = field(default="", init=False, repr=False, compare=False)

    def fingerprint(self) -> str:
        """A digest of every price: a result priced by another table is priced again. Made
        once per table: every kept report's mark names it."""
        if not self._fingerprint:
            import hashlib  # here: loading it is a good part of ``asz statusline``'s start

            digest = hashlib.sha256(repr(self.tables).encode()).hexdigest()[:16]
            object.__setattr__(self, "_fingerprint", digest)
        return self._fingerprint

    def price_of(self, model: str | None) -> ModelPrice | None:
        if not model:
            return None
        for table in self.tables:
            for key, price in table:
                if model == key:
                    return price
            for key, price in table:
                if model.startswith(key) and _DATE_SUFFIX.fullmatch(model[len(key) :]):
                    return price
        return None


@cache
def shipped_prices() -> PriceTable:
    # Read beside this module: importlib.resources would load zipfile, tempfile and threading,
    # a good part of ``asz statusline``'s start, for a package that is always installed as files.
    data = tomllib.loads(Path(__file__).with_name("prices.toml").read_text("utf-8"))
    return PriceTable(
        taken=str(data["taken"]),
        source=str(data["source"]),
        tables=(model_prices(data["models"], "asz/view/prices.toml"),),
    )


def price_table(overrides: tuple[tuple[str, ModelPrice], ...] = ()) -> PriceTable:
    shipped = shipped_prices()
    return PriceTable(shipped.taken, shipped.source, (overrides, *shipped.tables))


def writes(usage: Usage) -> tuple[int, int]:
    """(5-minute, 1-hour) cache writes; all 5-minute where the split is not given."""
    if usage.write_5m is None and usage.write_1h is None:
        return usage.cache_creation or 0, 0
    return usage.write_5m or 0, usage.write_1h or 0


def cost_usd(usage: Usage | None, price: ModelPrice | None) -> float | None:
    if usage is None or price is None:
        return None
    write_5m, write_1h = writes(usage)
    total = (
        (usage.input or 0) * price.input
        + (usage.output or 0) * price.output
        + (usage.cache_read or 0) * price.cache_read
        + write_5m * price.cache_write_5m
        + write_1h * price.cache_write_1h
    )
    return round(total / MILLION, DIGITS)


def waste_usd(rewritten: int | None, usage: Usage | None, price: ModelPrice | None) -> float | None:
    if rewritten is None or usage is None or price is None:
        return None
    write_5m, write_1h = writes(usage)
    write = price.cache_write_1h if write_1h > write_5m else price.cache_write_5m
    return round(rewritten * (write - price.cache_read) / MILLION, DIGITS)
