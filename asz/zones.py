"""The zone the commands show times in: UTC, unless a person asks for this machine's (``--local``).

Claude Code writes every time in UTC, and ``asz view``, ``asz sessions`` and ``asz cache``
all show them in one zone, named in every header that shows a time, so that a time read in
one is found as it is in another. ``--local`` moves all of them, the per-day totals and the
reading of ``--since`` too, to the machine's zone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo

__all__ = ["IN_UTC", "LOCAL", "Zone", "zone_of"]


@dataclass(frozen=True, slots=True)
class Zone:
    """A zone to show times in, and the word headers name it by."""

    tz: tzinfo | None
    """None: this machine's zone, whatever its offset on the day a time falls on."""
    label: str
    """In a header: ``FIRST (UTC)``, ``FIRST (local)``."""
    said: str
    """In a sentence: ``times in UTC``, ``times in local time``."""

    def moment(self, text: object) -> datetime | None:
        """A time as Claude Code writes it (ISO 8601; no offset means UTC) in this zone;
        None when it is not one."""
        if not isinstance(text, str):
            return None
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(self.tz)

    def of(self, when: float) -> datetime:
        """A POSIX time in this zone."""
        return datetime.fromtimestamp(when, self.tz).astimezone(self.tz)

    def read(self, moment: datetime) -> datetime:
        """A time a person typed: as written when it names its zone, else in this one."""
        if moment.tzinfo is not None:
            return moment
        return moment.replace(tzinfo=UTC) if self.tz is UTC else moment.astimezone()


IN_UTC = Zone(UTC, "UTC", "UTC")
LOCAL = Zone(None, "local", "local time")


def zone_of(local: bool) -> Zone:
    """The zone ``--local`` asks for."""
    return LOCAL if local else IN_UTC
