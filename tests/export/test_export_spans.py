"""The pieces of a span that are not read from a report: times parsed from the transcripts'
ISO stamps, ids derived from the session and message ids, and when a span is final."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.serving import land

from asz.config import ConfigError
from asz.config_file import load_config
from asz.export.otel import shown_url
from asz.export.spans import session_spans, span_id_of, time_ns, trace_id_of
from asz.store import open_store
from asz.synth import SynthOptions, synthesize
from asz.view.document import build_view
from asz.view.kept import session_report
from asz.view.prices import price_table

MOMENTS = st.datetimes(
    min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)


ZONES = st.sampled_from(
    [UTC, timezone(timedelta(hours=2)), timezone(-timedelta(hours=5, minutes=30))]
)


@given(MOMENTS, ZONES, st.booleans())
def test_a_transcript_time_is_its_unix_nanoseconds_in_any_zone(
    moment: datetime, zone: timezone, z: bool
) -> None:
    text = moment.astimezone(zone).isoformat(timespec="milliseconds")
    if z:  # Claude Code writes UTC as Z
        text = text.replace("+00:00", "Z")
    whole = int(moment.replace(microsecond=0).timestamp())
    assert time_ns(text) == whole * 1_000_000_000 + moment.microsecond // 1000 * 1_000_000


@given(st.text())
def test_any_text_is_a_time_or_none_and_never_an_error(text: str) -> None:
    found = time_ns(text)
    assert found is None or isinstance(found, int)


def test_a_time_without_a_zone_is_read_as_utc_as_every_listing_reads_it() -> None:
    utc = datetime(2026, 9, 18, 9, 1, 16, 791000, tzinfo=UTC)
    assert time_ns("2026-09-18T09:01:16.791") == int(utc.timestamp()) * 10**9 + 791 * 10**6
    assert time_ns(None) is None and time_ns("") is None


@given(st.text(min_size=1), st.text(min_size=1))
def test_ids_are_the_digests_of_the_session_and_the_key(session: str, key: str) -> None:
    trace = hashlib.sha256(session.encode()).digest()[:16]
    span = hashlib.sha256(f"{session}\0{key}".encode()).digest()[:8]
    assert trace_id_of(session) == int.from_bytes(trace, "big")
    assert span_id_of(session, key) == int.from_bytes(span, "big")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("batch_spans = 0", "otlp.batch_spans"),
        ("timeout = -1", "otlp.timeout"),
        ("backoff = 0", "otlp.backoff"),
        ("headers = 'x=y'", "otlp.headers"),
        ("endpont = 'http://x'", "otlp.endpont"),
    ],
)
def test_the_otlp_section_refuses_what_cannot_be_used(tmp_path: Path, text: str, key: str) -> None:
    config = tmp_path / "asz.toml"
    config.write_text(f"[otlp]\n{text}\n")
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config(config, env={"HOME": str(tmp_path)})


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("spans")
    claude = tmp / "claude"
    synthesize(claude, SynthOptions(seed=4))
    return land(tmp, claude)


@pytest.mark.slow
def test_while_a_session_lands_the_last_call_of_each_stream_and_its_side_requests_wait(
    landed: Path,
) -> None:
    store = open_store(landed)
    for session_id in store.sessions():
        session = store.session(session_id)
        view = build_view(session, responses=False)
        report = session_report(session, price_table(), keep=False)
        live = session_spans(view, report, quiet=False).spans
        quiet = session_spans(view, report, quiet=True).spans
        assert [span.span_id for span in live] == [span.span_id for span in quiet]
        assert all(span.final for span in quiet)
        waiting = {span.span_id for span in live if not span.final}
        last_of_stream = {}
        for call in view["calls"]:
            if not call["synthetic"]:
                last_of_stream[call["stream"]] = call["message_id"]
        expected = {span_id_of(session_id, message) for message in last_of_stream.values()}
        expected |= {
            span.span_id for span in live if span.attributes.get("asz.call.kind") == "side"
        }
        assert waiting == expected
        assert any(span.attributes.get("asz.call.kind") == "side" for span in live)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("https://user:key@otlp.example/v1/traces?token=k", "https://otlp.example/v1/traces"),
        ("http://127.0.0.1:4318/v1/traces", "http://127.0.0.1:4318/v1/traces"),
        ("ftp://key@x/y", "ftp://x/y"),
    ],
)
def test_an_endpoint_is_said_without_what_may_be_a_token(url: str, said: str) -> None:
    assert shown_url(url) == said
