"""A generation's manifest and names: what they say reads back, and anything else is refused."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from asz.store._generation import (
    FORMAT,
    PACK_FORMAT,
    GenerationError,
    decode_generation,
    encode_generation,
)
from asz.store._layout import (
    GenerationId,
    generation_dir,
    generation_file,
    ordinary_path,
    parse_generation_dir,
    parse_generation_file,
    transcripts_dir,
)
from asz.store._writer import Landed

SESSION = "11111111-2222-4333-8444-555555555555"
BODY = "provider_body/provider_body-00000001.asz"


def landed(replaces: int, count: int, revision: int = 0) -> list[Landed]:
    base = generation_dir(SESSION, GenerationId(replaces, revision))
    kinds = ["provider_body/provider_body", "transcripts/s-0123456789abcdef/transcript"]
    return [
        Landed(n, f"{base}/{kinds[n % 2]}-{n:08d}.asz", 100 + n, f"{n:064x}")
        for n in range(1, count + 1)
    ]


@given(st.integers(1, 50), st.integers(0, 50), st.integers(0, 12))
def test_a_manifest_reads_back_as_what_was_written(count: int, more: int, revision: int) -> None:
    ident = GenerationId(count + more, revision)
    files = landed(ident.replaces, count, revision)
    origin = (f"{SESSION}/provider_body/provider_body-00000001.asz", "ab" * 32)

    generation = decode_generation(SESSION, ident, encode_generation(SESSION, ident, files, origin))

    assert generation.id == ident
    assert [name.path for name in generation.files] == [f.path for f in files]
    assert generation.digests == {f.path: (f.size, f.sha256) for f in files}
    assert generation.origin == origin
    for name in generation.files:
        assert ordinary_path(SESSION, name.path).startswith(f"{SESSION}/")
        assert "/g-" not in ordinary_path(SESSION, name.path)


@given(st.binary(max_size=400))
def test_any_bytes_are_a_generation_or_refused_with_why(data: bytes) -> None:
    try:
        decode_generation(SESSION, GenerationId(3), data)
    except GenerationError as err:
        assert str(err)


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m.update(replaces=4),
        lambda m: m.update(revision=1),
        lambda m: m.update(session="66666666-7777-4888-8999-aaaaaaaaaaaa"),
        lambda m: m["files"][0].update(path=f"{SESSION}/{BODY}"),
        lambda m: m["files"][0].update(
            path=f"{SESSION}/g-00000003/../x/provider_body-00000001.asz"
        ),
        lambda m: m["files"].reverse(),
        lambda m: m.update(files=[]),
        lambda m: m.update(format="asz.generation/9"),
    ],
)
def test_a_manifest_that_does_not_hold_is_refused(change) -> None:
    manifest = orjson.loads(encode_generation(SESSION, GenerationId(3), landed(3, 2), None))
    change(manifest)

    with pytest.raises(GenerationError):
        decode_generation(SESSION, GenerationId(3), orjson.dumps(manifest))


def test_a_revision_is_refused_under_another_revision_s_name() -> None:
    files = landed(3, 2, revision=2)
    data = encode_generation(SESSION, GenerationId(3, 2), files, None)

    for other in (GenerationId(3), GenerationId(3, 1)):
        with pytest.raises(GenerationError):
            decode_generation(SESSION, other, data)


KEYS = ("s-0123456789abcdef", "s-fedcba9876543210")


def packed(replaces: int) -> tuple[list[Landed], dict[str, list[str]]]:
    """A body file, then a transcript pack holding two streams."""
    base = generation_dir(SESSION, GenerationId(replaces))
    pack = f"{base}/transcripts/transcript-00000002.asz"
    body = Landed(1, f"{base}/{BODY}", 10, "0" * 64)
    return [body, Landed(2, pack, 20, "1" * 64)], {pack: list(KEYS)}


def test_a_pack_stands_for_each_stream_it_holds() -> None:
    files, streams = packed(3)
    data = encode_generation(SESSION, GenerationId(3), files, None, streams)

    generation = decode_generation(SESSION, GenerationId(3), data)

    assert orjson.loads(data)["format"] == PACK_FORMAT
    alone = encode_generation(SESSION, GenerationId(3), files[:1], None)
    assert orjson.loads(alone)["format"] == FORMAT
    for key in KEYS:
        [name] = generation.in_dir(f"{transcripts_dir(SESSION)}/{key}")
        assert (name.seq, name.path, name.part) == (2, files[1].path, key)
    assert generation.in_dir(f"{transcripts_dir(SESSION)}/s-0000000000000000") == []
    assert generation.ordinary_dirs() == {
        f"{SESSION}/provider_body",
        *(f"{transcripts_dir(SESSION)}/{key}" for key in KEYS),
    }


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m["files"][1].pop("streams"),
        lambda m: m["files"][1].update(streams=[]),
        lambda m: m["files"][1].update(streams=["../x"]),
        lambda m: m["files"][1].update(streams=[KEYS[0], KEYS[0]]),
        lambda m: m["files"][0].update(streams=[KEYS[0]]),
    ],
)
def test_a_pack_without_its_streams_or_a_file_with_streams_is_refused(change) -> None:
    files, streams = packed(3)
    manifest = orjson.loads(encode_generation(SESSION, GenerationId(3), files, None, streams))
    change(manifest)

    with pytest.raises(GenerationError):
        decode_generation(SESSION, GenerationId(3), orjson.dumps(manifest))


def test_a_generation_of_more_files_than_it_replaces_is_refused() -> None:
    two = GenerationId(2)
    with pytest.raises(GenerationError):
        decode_generation(SESSION, two, encode_generation(SESSION, two, landed(2, 3), None))


@given(st.integers(0, 10**12), st.integers(0, 10**6))
def test_a_generation_s_names_read_back_as_it(replaces: int, revision: int) -> None:
    ident = GenerationId(replaces, revision)
    directory = generation_dir(SESSION, ident).rsplit("/", 1)[-1]
    manifest = generation_file(SESSION, ident).rsplit("/", 1)[-1]

    assert parse_generation_dir(directory) == ident
    assert parse_generation_file(manifest) == ident
    assert ordinary_path(SESSION, f"{SESSION}/{directory}/{BODY}") == f"{SESSION}/{BODY}"


def test_names_without_a_revision_are_revision_0_and_newest_is_highest_then_latest() -> None:
    assert parse_generation_file("generation-00000012.json") == GenerationId(12, 0)
    assert parse_generation_dir("g-00000012") == GenerationId(12, 0)
    assert parse_generation_file("generation-00000012.3.json") == GenerationId(12, 3)
    assert parse_generation_dir("g-00000012.3") == GenerationId(12, 3)
    ids = [GenerationId(12, 3), GenerationId(13), GenerationId(12), GenerationId(12, 10)]
    assert max(ids) == GenerationId(13)
    assert sorted(ids)[:3] == [GenerationId(12), GenerationId(12, 3), GenerationId(12, 10)]


@pytest.mark.parametrize(
    "name",
    ["g-00000012.0", "g-00000012.", "g-00000012.01", "g-0000012.1", "generation-00000012.0.json"],
)
def test_a_revision_has_one_name(name: str) -> None:
    assert parse_generation_dir(name) is None and parse_generation_file(name) is None
