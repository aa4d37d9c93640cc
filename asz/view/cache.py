"""The cache report: for every call, what it re-wrote of the prompt cache and what it cost, and
for every landed request, what made it miss the cache, or that nothing did.

Rows are the session's calls (see :mod:`.usage` for the breaks found from usage alone and
:mod:`.prices` for money), then the landed requests joined to no call. Each landed request is
compared with the previous request of its chain (:mod:`.causes`): the one joined to the call
whose response carries the request id this request names in ``cc_prev_req``. A request that
names none is a chain's ``first``. See ``docs/view.md``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from asz.gc_pause import gc_paused
from asz.store import BodyManifest, Session
from asz.view.calls import Call
from asz.view.causes import BREAKS, FIRST, UNKNOWN, UNREADABLE, agrees_with_provider
from asz.view.comparisons import compare_requests
from asz.view.document import problems_of
from asz.view.evidence import SOURCES, Named, agrees, strongest
from asz.view.joins import JoinedSession, join_session
from asz.view.named_causes import named_by_lines
from asz.view.prices import DIGITS, PriceTable, cost_usd, price_table, waste_usd, writes
from asz.view.records import (
    ByCause,
    CacheReport,
    CacheRow,
    CacheTotals,
    CallFacts,
    Comparison,
    RowFacts,
    Weighed,
    WriteSplit,
)
from asz.view.spend import by_family
from asz.view.usage import Expectation, Usage, expectations, hit_ratio

__all__ = ["UNCOMPARED", "cache_report", "report_and_facts"]

UNCOMPARED = frozenset({FIRST, UNKNOWN, UNREADABLE})
"""The bodies' outcomes that name no cause: there was nothing to compare with."""


class _Report:
    """One session's rows: request shapes are read once each and kept small."""

    def __init__(self, session: Session) -> None:
        self.joined = join_session(session)
        self.problems: list[str] = []
        """What reading the bodies met, besides the session's own problems."""
        self.compared = compare_requests(self.joined, self.problems)

    def usage(self, call: Call) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """The call's ``usage``: the joined response's, else the transcript's; and the joined
        response's facts (its ``stop_reason`` and own ``cache_miss_reason``; empty without
        one)."""
        response_id = self.joined.joins.response_of.get(call.message_id)
        facts = (self.compared.responses.get(response_id) if response_id else None) or {}
        usage = facts.get("usage")
        return (usage if usage is not None else call.usage), facts

    def rows(self, prices: PriceTable) -> tuple[list[CacheRow], list[RowFacts]]:
        """A row per non-synthetic call, in the view's order, then one per landed request
        joined to no call, in landing order; and the facts of each row the analytics tables
        take besides (:class:`asz.view.records.RowFacts`)."""
        joins = self.joined.joins
        transcript = self.joined.transcript
        numbered = [
            (n, call)
            for n, call in enumerate(transcript.ordered_calls(), start=1)
            if not call.synthetic
        ]
        calls = [call for _n, call in numbered]
        found = {call.message_id: self.usage(call) for call in calls}
        usages = {message_id: Usage.of(usage) for message_id, (usage, _) in found.items()}
        expected = expectations(transcript, usages)
        named = named_by_lines(transcript, usages, expected)
        rows: list[CacheRow] = []
        facts: list[RowFacts] = []
        for n, call in numbered:
            request_id = joins.request_of.get(call.message_id)
            request = self.joined.bodies[request_id] if request_id else None
            comparison = self.compared.comparisons.get(request_id) if request_id else None
            usage, response = found[call.message_id]
            rows.append(
                _row(
                    request,
                    call,
                    comparison=self.compared.comparisons.get(request.record_id)
                    if request
                    else None,
                    usage=usage,
                    response=response,
                    expectation=expected.get(call.message_id, Expectation()),
                    prices=prices,
                    named=named.get(call.message_id, []),
                )
            )
            facts.append(
                {
                    "call": n,
                    "model": call.model,
                    "version": call.version,
                    "response_id": joins.response_of.get(call.message_id),
                    "placed": None,
                }
            )
        for body in self.joined.bodies.values():
            if body.role == "request" and body.record_id not in joins.call_of:
                comparison = self.compared.comparisons.get(body.record_id)
                rows.append(
                    _row(
                        body, None, comparison=comparison, expectation=Expectation(), prices=prices
                    )
                )
                facts.append(self.side_facts(comparison))
        return rows, facts

    def side_facts(self, comparison: Comparison | None) -> RowFacts:
        """A side request's facts: no call, and its place in time, the end of the call
        before it in its chain (that of the request it follows)."""
        previous = comparison["previous"] if comparison else None
        message_id = self.joined.joins.call_of.get(previous) if previous else None
        before = self.joined.transcript.calls.get(message_id) if message_id else None
        placed = (before.last_time or before.time) if before else None
        return {
            "call": None,
            "model": None,
            "version": None,
            "response_id": None,
            "placed": placed,
        }


def _row(
    request: BodyManifest | None,
    call: Call | None,
    *,
    comparison: Comparison | None,
    usage: dict[str, Any] | None = None,
    response: dict[str, Any] | None = None,
    expectation: Expectation,
    prices: PriceTable,
    named: list[Named] | None = None,
) -> CacheRow:
    counts = Usage.of(usage)
    price = prices.price_of(call.model) if call else None
    compared: Comparison = comparison or {
        "previous": None,
        "cause": None,
        "detail": None,
        "also": [],
    }
    return {
        "request_id": request.record_id if request else None,
        "message_id": call.message_id if call else None,
        "stream": call.stream if call else None,
        "time": call.time if call else None,
        **compared,
        **_weighed(compared, named or [], bool(expectation.rewritten_tokens)),
        "input_tokens": counts.input if counts else None,
        "cache_read_input_tokens": counts.cache_read if counts else None,
        "cache_creation_input_tokens": counts.cache_creation if counts else None,
        **_split(counts),
        "output_tokens": counts.output if counts else None,
        "stop_reason": (response or {}).get("stop_reason"),
        "reported_miss_reason": _reported(response, call),
        "expected_read": expectation.expected_read,
        "rewritten_tokens": expectation.rewritten_tokens,
        "cost_usd": cost_usd(counts, price),
        "waste_usd": waste_usd(expectation.rewritten_tokens, counts, price),
        "model": call.model if call else None,
        "usage": counts,
    }


def _weighed(compared: Comparison, named: list[Named], broke: bool) -> Weighed:
    """``cause_from`` and ``evidence`` (source -> the cause it names), and for a break the
    strongest evidence's ``cause``, ``detail`` and ``also``: the bodies' comparison when it
    found a change, else what the API, the lines or usage name. ``first``, ``unknown`` and
    ``unreadable`` say the bodies could not compare: they stay the cause only when nothing
    else names one, and are said after the detail of the one that does."""
    said = compared["cause"]
    judged = said in BREAKS or said == "kept"
    if judged and said is not None:
        named = [Named("bodies", said, compared["detail"] or ""), *named]
    evidence = {"bodies": said} if said else {}
    for item in named:
        evidence.setdefault(item.source, item.cause)
    best = strongest(named) if broke else None
    if best is None or best.source == "bodies":
        return {"cause_from": "bodies" if said else None, "evidence": evidence}
    also = [item.cause for item in named if item.source == best.source][1:]
    detail = best.detail
    if said and not judged:
        detail = f"{detail} (bodies: {said}, {compared['detail']})"
    return {
        "cause": best.cause,
        "detail": detail,
        "also": list(dict.fromkeys(also)),
        "cause_from": best.source,
        "evidence": evidence,
    }


def _reported(response: dict[str, Any] | None, call: Call | None) -> Any:
    """The provider's ``cache_miss_reason``: the response's, else the ``type`` of the one on
    the call's transcript line (as recent Claude Code writes it)."""
    reported = (response or {}).get("cache_miss_reason")
    if reported is None and call is not None:
        reported = call.on_lines.get("verdict")
    return reported


def _split(counts: Usage | None) -> WriteSplit:
    """The cache writes by lifetime, as the cost counts them (all 5-minute ones where the
    usage gives no split), so the figures beside a cost are the ones it was priced from."""
    write_5m, write_1h = writes(counts) if counts else (None, None)
    return {"cache_write_5m_input_tokens": write_5m, "cache_write_1h_input_tokens": write_1h}


def cache_report(session: Session, prices: PriceTable | None = None) -> CacheReport:
    """Rows (one per call, then one per landed request joined to no call), per-session
    totals, and why the report has nothing to say of the requests when none is joined to
    its call. ``prices`` is the shipped price table when None."""
    return report_and_facts(session, prices)[0]


def report_and_facts(
    session: Session, prices: PriceTable | None = None
) -> tuple[CacheReport, CallFacts]:
    """:func:`cache_report`, and what the analytics tables take of its rows besides, from
    the same reading of the session (the kept report keeps both)."""
    with gc_paused():
        report = _Report(session)
        rows, facts = report.rows(prices or price_table())
    problems = problems_of(report.joined, report.problems)
    totals = _totals(rows)
    totals["by_family"] = by_family(rows)
    for row in rows:
        del row["model"], row["usage"]
    found: CacheReport = {
        "session": session.id,
        "rows": rows,
        "totals": totals,
        "empty_because": _empty_because(report.joined, rows, problems),
        "problems": problems,
    }
    return found, {"last_time": report.joined.transcript.last_time, "rows": facts}


def _empty_because(joined: JoinedSession, rows: list[CacheRow], problems: list[str]) -> str | None:
    """Why no row is joined to a call, in the words of what is missing; None when one is.

    An empty report on its own reads as "nothing broke the cache"; it has to say whether no
    request landed, none could be read, or none could be joined, and what kept them apart.
    """
    rows = [row for row in rows if row["request_id"] is not None]
    if not rows:
        if problems:
            return "no request body of this session could be read (see the problems)"
        return "no request bodies landed for this session"
    if any(row["message_id"] for row in rows):
        return None
    unjoined = "none of the session's requests could be joined to a call"
    calls = [call for call in joined.transcript.calls.values() if not call.synthetic]
    if not calls:
        return f"{unjoined}: no transcript line of a model call landed for this session"
    requests = [joined.bodies[row["request_id"]] for row in rows if row["request_id"]]
    if all(body.keys.prompt is None for body in requests):
        return f"{unjoined}: the requests carry no prompt ids (cc_prompt_id)"
    if not any(call.prompt_id for call in calls) and not joined.index:
        return f"{unjoined}: the transcripts carry no prompt ids (promptId)"
    reasons = Counter(
        why.reason for body in requests if (why := joined.joins.unjoined.get(body.record_id))
    )
    said = ", ".join(f"{count} {reason}" for reason, count in reasons.most_common())
    return f"{unjoined}: {said}" if said else unjoined


def _totals(rows: list[CacheRow]) -> CacheTotals:
    input_tokens = sum(row["input_tokens"] or 0 for row in rows)
    read = sum(row["cache_read_input_tokens"] or 0 for row in rows)
    written = sum(row["cache_creation_input_tokens"] or 0 for row in rows)
    by_cause: dict[str, ByCause] = {}
    for row in rows:
        if row["cause"] is None:
            continue
        entry = by_cause.setdefault(row["cause"], {"requests": 0, "cache_creation_input_tokens": 0})
        entry["requests"] += 1
        entry["cache_creation_input_tokens"] += row["cache_creation_input_tokens"] or 0
    costs = [row["cost_usd"] for row in rows if row["cost_usd"] is not None]
    wastes = [row["waste_usd"] for row in rows if row["waste_usd"] is not None]
    unpriced = {
        row["model"] or "(no model)"
        for row in rows
        if row["cost_usd"] is None and row["input_tokens"] is not None
    }
    reported = [
        agrees_with_provider(row["cause"], row["reported_miss_reason"])
        for row in rows
        if row["reported_miss_reason"] is not None
    ]
    return {
        "requests": sum(row["request_id"] is not None for row in rows),
        "with_usage": sum(row["input_tokens"] is not None for row in rows),
        "input_tokens": input_tokens,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
        "hit_ratio": hit_ratio(read, written, input_tokens),
        "by_cause": by_cause,
        "rewritten_tokens": sum(row["rewritten_tokens"] or 0 for row in rows),
        "breaks": sum((row["rewritten_tokens"] or 0) > 0 for row in rows),
        "cost_usd": round(sum(costs), DIGITS) if costs else None,
        "waste_usd": round(sum(wastes), DIGITS) if wastes else None,
        "unpriced_models": sorted(unpriced),
        "reported": len(reported),
        "agreed": sum(reported),
        "breaks_by_evidence": _breaks_by_evidence(rows),
        "api_agreement": _api_agreement(rows),
    }


def _breaks_by_evidence(rows: list[CacheRow]) -> dict[str, int]:
    """Breaks by the source of their cause; ``none`` for those no evidence names."""
    found = dict.fromkeys([*SOURCES, "none"], 0)
    for row in rows:
        if row["rewritten_tokens"]:
            source = row["cause_from"]
            named = source in SOURCES and (source != "bodies" or row["cause"] in BREAKS)
            found[source if named and source is not None else "none"] += 1
    return found


def _api_agreement(rows: list[CacheRow]) -> dict[str, dict[str, int]]:
    """API cause -> the calls where it and other evidence both name a cause (``compared``),
    and those where they agree (:data:`asz.view.evidence.AGREES`)."""
    found: dict[str, dict[str, int]] = {}
    for row in rows:
        evidence = row["evidence"]
        api = evidence.get("api")
        other = next((evidence[s] for s in SOURCES if s != "api" and s in evidence), None)
        if evidence.get("bodies") in UNCOMPARED:
            other = evidence.get("transcript", evidence.get("usage"))
        if api is None or other is None:
            continue
        entry = found.setdefault(api, {"compared": 0, "agreed": 0})
        entry["compared"] += 1
        entry["agreed"] += agrees(api, other)
    return found
