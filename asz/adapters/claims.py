"""Which session a provider body belongs to, decided from what bodies and transcripts say.

Nothing is inferred from timing alone or from file order. A request names its session; a
response names no session, so it is claimed through something that names it: Claude Code's
own ``index.jsonl``, a request of one session naming its request id as the previous call of
its chain, or a landed transcript of one session recording its message id. Whenever two
sessions could claim a body, or none does, the body waits and the next pass asks again.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from asz.bodykeys import BodyKeys, is_session_id

__all__ = [
    "SEVERAL",
    "UNCLAIMED",
    "WINDOW_NS",
    "By",
    "CallsOf",
    "Claim",
    "Claimer",
    "Request",
    "RequestBook",
]

WINDOW_NS = 24 * 3600 * 1_000_000_000
"""How far apart a response and a request of the session searched for it may have been written."""
_BUCKET_NS = 3600 * 1_000_000_000


class By:
    """How a body was claimed (the values name the rule, as reports and tests show them)."""

    INDEX = "index"
    REQUEST = "request"
    TRANSCRIPT = "transcript"


@dataclass(frozen=True, slots=True)
class Claim:
    session: str | None
    by: str | None = None


Request = tuple[str | None, str | None, int]
"""``(session, prev_request, mtime_ns)`` of one request."""
UNCLAIMED = Claim(None)
SEVERAL = ""
"""What a request id is named by when requests of several sessions name it (no session id is
empty, so it can stand for none of them)."""


class RequestBook:
    """What every known request says: the request ids it names and when its session wrote.

    Only requests naming a session in Claude Code's form are entered, so nothing here can point
    outside the storage root. Times are bucketed by the hour: the sessions of the hours wholly
    inside a window are taken as they are, and only those of the two edge hours are checked
    against their exact times, so a search costs a few set unions however many requests
    there are.
    """

    def __init__(self, load: Callable[[], Iterable[Request]] | None = None) -> None:
        """``load`` gives the requests to enter when the book is first asked anything: a pass
        whose candidates are all requests never asks, and so never reads every request."""
        self._load = load
        self._named_by: dict[str, str] = {}
        """Request id -> the one session naming it, or ``SEVERAL``."""
        self._times: dict[str, list[int]] = {}
        self._undated: set[str] = set()
        self._valid: set[str] = set()
        self._buckets: dict[int, set[str]] | None = None

    def add(self, session: str | None, prev_request: str | None, mtime_ns: int) -> None:
        """Enters one request; ``mtime_ns`` below 0 means its time is unknown."""
        self.add_all(((session, prev_request, mtime_ns),))

    def add_all(self, requests: Iterable[Request]) -> None:
        """Enters ``(session, prev_request, mtime_ns)`` of many requests (one tight loop: a
        pass enters every request it knows)."""
        named_by, times, undated, valid = self._named_by, self._times, self._undated, self._valid
        for session, prev_request, mtime_ns in requests:
            if session not in valid:
                if not session or not is_session_id(session):
                    continue
                valid.add(session)
            if prev_request and named_by.setdefault(prev_request, session) != session:
                named_by[prev_request] = SEVERAL
            if mtime_ns < 0:
                undated.add(session)
            else:
                times.setdefault(session, []).append(mtime_ns)
        self._buckets = None

    def _loaded(self) -> None:
        if self._load is not None:
            load, self._load = self._load, None
            self.add_all(load())

    def sessions(self) -> set[str]:
        """Every session some request names."""
        self._loaded()
        return set(self._times) | self._undated

    def namer(self, request_id: str) -> str | None:
        """The one session having a request that names ``request_id`` as its previous call,
        ``SEVERAL`` when more than one session does, None when none does."""
        self._loaded()
        return self._named_by.get(request_id)

    def sessions_near(self, mtime_ns: int) -> set[str]:
        """Sessions with a request written within the window of ``mtime_ns`` (or undated)."""
        self._loaded()
        low, high = mtime_ns - WINDOW_NS, mtime_ns + WINDOW_NS
        first, last = low // _BUCKET_NS, high // _BUCKET_NS
        found = set(self._undated)
        buckets = self._hour_buckets()
        found.update(*(buckets.get(bucket, ()) for bucket in range(first + 1, last)))
        edges = buckets.get(first, set()) | buckets.get(last, set())
        found.update(
            session for session in edges - found if self._has_time_between(session, low, high)
        )
        return found

    def _hour_buckets(self) -> dict[int, set[str]]:
        """Sessions by the hours they wrote requests in, built when first searched."""
        if self._buckets is None:
            self._buckets = {}
            for session, times in self._times.items():
                times.sort()
                for hour in {time // _BUCKET_NS for time in times}:
                    self._buckets.setdefault(hour, set()).add(session)
        return self._buckets

    def _has_time_between(self, session: str, low: int, high: int) -> bool:
        times = self._times[session]
        at = bisect_left(times, low)
        return at < len(times) and times[at] <= high


CallsOf = Callable[[str], Iterable[str]]
"""``calls_of(session)``: the message ids the session's landed transcripts record."""


class Claimer:
    """Applies the claim rules in order: the index, then the request, then the transcript.

    The transcripts of a session are asked for at most once, the first time the session is
    near a response searched for, and their message ids go into one reverse index, so a
    search is a set intersection rather than a question per session. A response that no
    transcript claimed on an earlier pass is searched again only when a session near it is
    among ``changed()`` (asked once: sessions whose transcripts or requests are new since),
    since otherwise the search would find what it found before.
    """

    def __init__(
        self,
        book: RequestBook,
        index_claims: Mapping[str, str],
        calls_of: CallsOf,
        changed: Callable[[], AbstractSet[str]],
    ) -> None:
        self._book = book
        self._index = index_claims
        self._calls_of = calls_of
        self._changed = changed
        self._changed_now: AbstractSet[str] | None = None
        self._searched: set[str] = set()
        self._holders: dict[str, str | set[str]] = {}
        """Message id -> the session whose transcripts record it (a set when several do)."""

    def claim(
        self, name: str, role: str, keys: BodyKeys, mtime_ns: int, searched_before: bool = False
    ) -> Claim:
        """The session of the body in file ``name``, and the rule that found it.

        ``searched_before``: the transcripts were searched for this body on an earlier pass,
        and claimed it for no session."""
        if name in self._index:
            session = self._index[name]
            return Claim(session, By.INDEX) if is_session_id(session) else UNCLAIMED
        if role == "request":
            named = keys.session
            return Claim(named, By.REQUEST) if named and is_session_id(named) else UNCLAIMED
        namer = self._book.namer(keys.request_id) if keys.request_id else None
        if namer is not None:
            return Claim(namer, By.REQUEST) if namer != SEVERAL else UNCLAIMED
        if keys.message_id:
            near = self._book.sessions_near(mtime_ns)
            if self._changed_now is None:
                self._changed_now = self._changed()
            if searched_before and near.isdisjoint(self._changed_now):
                return UNCLAIMED
            holders = self._holding(keys.message_id, near)
            if len(holders) == 1:
                return Claim(next(iter(holders)), By.TRANSCRIPT)
        return UNCLAIMED

    def _holding(self, message_id: str, near: set[str]) -> set[str]:
        holders = self._holders
        for session in sorted(near - self._searched):
            self._searched.add(session)
            for call in self._calls_of(session):
                known = holders.setdefault(call, session)
                if isinstance(known, set):
                    known.add(session)
                elif known != session:
                    holders[call] = {known, session}
        found = holders.get(message_id)
        return ({found} if isinstance(found, str) else found or set()) & near
