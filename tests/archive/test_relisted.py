"""An object a relisting push finds in its way: this root's file under an older policy (or
raw), or another root's, by what its header says of the landed file it stands for."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from asz.archive.relisted import went_under
from asz.store._framing import frame

SESSION = "11111111-2222-4333-8444-555555555555"
PATH = f"{SESSION}/provider_index/provider_index-00000003.asz"
HEADER = {"kind": "provider_index", "session": SESSION, "seq": 3, "src": "index.jsonl"}
STAMP = {"at": "2026-01-02T03:04:05.000006+00:00", "writer": "asz/1.0"}
LINE = ({"off": 0, "sha256": "0" * 64}, b'{"line": 1}\n')


def landed(**header: object) -> bytes:
    return frame({**HEADER, **header}, [LINE], "zstd", stamp=STAMP).data


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_the_landed_file_itself_went_raw(compression: str) -> None:
    ours = frame(HEADER, [LINE], compression, stamp=STAMP).data
    assert went_under(ours, PATH, ours) == ""


def test_its_counterpart_went_under_the_policy_its_header_names() -> None:
    redacted = frame({**HEADER, "redacted": "ab" * 12}, [LINE], "zstd", stamp=STAMP).data
    assert went_under(redacted, PATH, landed()) == "ab" * 12


def test_another_root_s_file_at_that_number_is_none_of_this_root_s() -> None:
    other = {**STAMP, "at": "2026-01-02T03:04:05.000007+00:00"}
    theirs = frame({**HEADER, "redacted": "ab" * 12}, [LINE], "zstd", stamp=other).data
    assert went_under(theirs, PATH, landed()) is None
    assert went_under(frame(HEADER, [LINE], "zstd", stamp=other).data, PATH, landed()) is None


@given(st.binary(max_size=300))
def test_any_other_bytes_are_none_of_this_root_s(found: bytes) -> None:
    assert went_under(found, PATH, landed()) is None
