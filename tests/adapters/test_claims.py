"""Claiming a body for a session: the index, a later request, a transcript, or nobody."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from asz.adapters.claims import SEVERAL, WINDOW_NS, By, Claim, Claimer, RequestBook
from asz.bodykeys import BodyKeys

A = "11111111-2222-4333-8444-555555555555"
B = "66666666-7777-4888-8999-aaaaaaaaaaaa"
C = "CCCCCCCC-7777-4888-8999-AAAAAAAAAAAA"
HOUR = 3600 * 1_000_000_000
T0 = 1_750_000_000 * 1_000_000_000


def transcripts(holding: dict[str, set[str]]):
    """The calls each session's transcripts record, counting the sessions asked about."""
    asked: list[str] = []

    def calls_of(session: str) -> set[str]:
        asked.append(session)
        return holding.get(session, set())

    calls_of.asked = asked  # type: ignore[attr-defined]
    return calls_of


def response(request_id: str | None, message_id: str | None) -> BodyKeys:
    return BodyKeys(model="m", request_id=request_id, message_id=message_id)


def test_a_request_belongs_to_the_session_it_names_in_claude_codes_form() -> None:
    claimer = Claimer(RequestBook(), {}, transcripts({}), set)
    name = "f0.request.json"
    assert claimer.claim(name, "request", BodyKeys(session=A), T0) == Claim(A, By.REQUEST)
    assert claimer.claim(name, "request", BodyKeys(session=C), T0) == Claim(C, By.REQUEST)
    for session in ("../outside", "a" * 36, "", None, A.upper() + "0"):
        assert claimer.claim(name, "request", BodyKeys(session=session), T0).session is None


def test_the_index_is_authoritative_and_a_disputed_index_claim_waits() -> None:
    book = RequestBook()
    book.add(B, "req_1", T0)
    claimer = Claimer(book, {"req_1.response.json": A, "x.request.json": ""}, transcripts({}), set)
    claimed = claimer.claim("req_1.response.json", "response", response("req_1", "msg_1"), T0)
    assert claimed == Claim(A, By.INDEX)
    named = claimer.claim("x.request.json", "request", BodyKeys(session=A), T0)
    assert named.session is None


def test_a_response_is_claimed_by_the_one_session_whose_request_names_it() -> None:
    book = RequestBook()
    book.add(A, "req_a1", T0)
    book.add(A, "req_a1", T0 + 5)
    holds = transcripts({B: {"msg_a1"}})
    claimer = Claimer(book, {}, holds, set)
    claimed = claimer.claim("req_a1.response.json", "response", response("req_a1", "msg_a1"), T0)
    assert claimed == Claim(A, By.REQUEST)
    assert holds.asked == []


def test_two_sessions_naming_one_request_id_leave_the_response_waiting() -> None:
    book = RequestBook()
    book.add(A, "req_x", T0)
    book.add(B, "req_x", T0)
    holds = transcripts({A: {"msg_x"}})
    claimer = Claimer(book, {}, holds, set)
    claimed = claimer.claim("req_x.response.json", "response", response("req_x", "msg_x"), T0)
    assert claimed.session is None
    assert holds.asked == [], "several namers never fall back to the transcripts"


def test_a_response_no_request_names_is_claimed_by_the_transcript_holding_its_message() -> None:
    book = RequestBook()
    book.add(A, None, T0)
    book.add(B, None, T0 + HOUR)
    claimer = Claimer(book, {}, transcripts({A: {"msg_last"}}), set)
    claimed = claimer.claim(
        "req_last.response.json", "response", response("req_last", "msg_last"), T0 + 2 * HOUR
    )
    assert claimed == Claim(A, By.TRANSCRIPT)


def test_a_uuid_named_response_goes_straight_to_the_transcripts() -> None:
    book = RequestBook()
    book.add(A, None, T0)
    claimer = Claimer(book, {}, transcripts({A: {"msg_u"}}), set)
    keys = response(None, "msg_u")
    assert claimer.claim(f"{B}.response.json", "response", keys, T0) == Claim(A, By.TRANSCRIPT)


def test_two_transcripts_holding_the_message_leave_the_response_waiting() -> None:
    book = RequestBook()
    book.add(A, None, T0)
    book.add(B, None, T0)
    claimer = Claimer(book, {}, transcripts({A: {"msg_1"}, B: {"msg_1"}}), set)
    assert claimer.claim("r.response.json", "response", response("r", "msg_1"), T0).session is None


def test_a_session_whose_requests_are_25_hours_away_is_not_searched() -> None:
    book = RequestBook()
    book.add(A, None, T0)
    holds = transcripts({A: {"msg_1"}})
    claimer = Claimer(book, {}, holds, set)
    far = T0 + 25 * HOUR
    assert claimer.claim("r.response.json", "response", response("r", "msg_1"), far).session is None
    assert holds.asked == []
    near = T0 + 23 * HOUR
    assert claimer.claim("r.response.json", "response", response("r", "msg_1"), near).session == A


def test_a_response_without_a_message_id_that_nobody_names_waits() -> None:
    book = RequestBook()
    book.add(A, "req_other", T0)
    claimer = Claimer(book, {}, transcripts({A: {"msg"}}), set)
    assert claimer.claim("r.response.json", "response", response("r", None), T0).session is None


def test_the_window_is_inclusive_and_undated_requests_are_always_near() -> None:
    book = RequestBook()
    book.add(A, None, T0)
    book.add(B, None, -1)
    assert book.sessions_near(T0 + WINDOW_NS) == {A, B}
    assert book.sessions_near(T0 - WINDOW_NS) == {A, B}
    assert book.sessions_near(T0 + WINDOW_NS + 1) == {B}
    assert book.sessions_near(T0 - WINDOW_NS - 1) == {B}


def test_requests_naming_no_session_in_claude_codes_form_are_not_entered() -> None:
    book = RequestBook()
    book.add("../outside", "req_1", T0)
    book.add(None, "req_1", T0)
    book.add("", "req_1", T0)
    assert book.namer("req_1") is None
    assert book.sessions_near(T0) == set()


SESSIONS = [A, B, C, "0" * 8 + "-0000-0000-0000-" + "0" * 12]


@given(
    requests=st.lists(
        st.tuples(st.sampled_from(SESSIONS), st.integers(0, 200 * HOUR)), max_size=40
    ),
    at=st.integers(-30 * HOUR, 230 * HOUR),
)
def test_sessions_near_is_exactly_the_sessions_with_a_request_in_the_window(
    requests: list[tuple[str, int]], at: int
) -> None:
    book = RequestBook()
    for session, mtime in requests:
        book.add(session, None, mtime)
    expected = {session for session, mtime in requests if abs(mtime - at) <= WINDOW_NS}
    assert book.sessions_near(at) == expected


def test_each_sessions_transcripts_are_read_once_however_many_responses_are_searched() -> None:
    book = RequestBook()
    book.add(A, None, T0)
    book.add(B, None, T0 + HOUR)
    calls_of = transcripts({A: {"msg_1", "msg_2"}, B: {"msg_3"}})
    claimer = Claimer(book, {}, calls_of, set)
    found = [
        claimer.claim(f"r{n}.response.json", "response", response(f"r{n}", f"msg_{n}"), T0)
        for n in (1, 2, 3, 4)
    ]
    assert [claim.session for claim in found] == [A, A, B, None]
    assert sorted(calls_of.asked) == [A, B]


def test_an_unclaimed_response_is_searched_again_only_when_something_near_it_changed() -> None:
    book = RequestBook()
    book.add(A, None, T0)
    book.add(B, None, T0 + 30 * HOUR)
    keys = response("r", "msg_1")
    for changed, asked, session in [
        (set(), [], None),
        ({B}, [], None),
        ({A}, [A], A),
    ]:
        calls_of = transcripts({A: {"msg_1"}})
        claimer = Claimer(book, {}, calls_of, lambda changed=changed: changed)
        again = claimer.claim("r.response.json", "response", keys, T0, searched_before=True)
        assert (again.session, calls_of.asked) == (session, asked)
    calls_of = transcripts({A: {"msg_1"}})
    fresh = Claimer(book, {}, calls_of, set).claim("r.response.json", "response", keys, T0)
    assert (fresh.session, calls_of.asked) == (A, [A])


@given(st.lists(st.tuples(st.sampled_from(SESSIONS), st.sampled_from(["r1", "r2", "r3"]))))
def test_a_request_id_is_named_by_one_session_by_several_or_by_none(
    requests: list[tuple[str, str]],
) -> None:
    book = RequestBook()
    book.add_all((session, prev, T0) for session, prev in requests)
    for request_id in ("r1", "r2", "r3"):
        sessions = {session for session, prev in requests if prev == request_id}
        expected = None if not sessions else sessions.pop() if len(sessions) == 1 else SEVERAL
        assert book.namer(request_id) == expected


def test_a_book_reads_its_requests_only_when_a_response_needs_them() -> None:
    loads: list[int] = []

    def load() -> list[tuple[str | None, str | None, int]]:
        loads.append(1)
        return [(A, "req_1", T0), (B, "req_2", T0)]

    book = RequestBook(load)
    claimer = Claimer(book, {}, transcripts({}), set)
    assert claimer.claim("r.request.json", "request", BodyKeys(session=A), T0).session == A
    assert loads == [], "a request names its own session"
    assert claimer.claim("req_1.response.json", "response", response("req_1", None), T0) == Claim(
        A, By.REQUEST
    )
    assert claimer.claim("req_2.response.json", "response", response("req_2", None), T0) == Claim(
        B, By.REQUEST
    )
    assert loads == [1], "read once, when first asked"
    book.add(A, "req_2", T0 + 1)
    assert book.namer("req_2") == SEVERAL
    assert book.sessions() == {A, B}
