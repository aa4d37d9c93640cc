"""The pieces of a span that are not read from a report: times parsed from the transcripts'
ISO stamps, and ids derived from the session and message ids."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from asz.config import ConfigError, load_config
from asz.export.spans import span_id_of, time_ns, trace_id_of

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


def test_a_time_without_a_zone_is_no_time() -> None:
    assert time_ns("2026-09-18T09:01:16.791") is None
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
        ("headers = 'x=y'", "otlp.headers"),
        ("endpont = 'http://x'", "otlp.endpont"),
    ],
)
def test_the_otlp_section_refuses_what_cannot_be_used(tmp_path: Path, text: str, key: str) -> None:
    config = tmp_path / "asz.toml"
    config.write_text(f"[otlp]\n{text}\n")
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config(config, env={"HOME": str(tmp_path)})
