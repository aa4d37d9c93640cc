"""What a generation in the archive stands in for, by name: ordinary files up to its number,
older generations (fewer numbers, or an earlier revision of the same), never a newer one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from asz.archive.prune import replaced_by
from asz.store import GenerationId
from asz.store._layout import generation_dir, generation_file

SESSION = "11111111-2222-4333-8444-555555555555"
OTHER = "66666666-7777-4888-8999-aaaaaaaaaaaa"
ids = st.builds(GenerationId, st.integers(1, 10**6), st.integers(0, 5))


@given(ids, ids)
def test_a_generation_replaces_every_older_one_and_no_newer(
    newest: GenerationId, other: GenerationId
) -> None:
    manifest = generation_file(SESSION, other)
    inside = f"{generation_dir(SESSION, other)}/provider_body/provider_body-00000001.asz"

    assert replaced_by(SESSION, manifest, newest) == (other < newest)
    assert replaced_by(SESSION, inside, newest) == (other < newest)
    assert not replaced_by(OTHER, manifest, newest)


@given(ids, st.integers(1, 2 * 10**6))
def test_a_generation_replaces_the_ordinary_files_up_to_its_number(
    newest: GenerationId, seq: int
) -> None:
    path = f"{SESSION}/transcripts/s-0123456789abcdef/transcript-{seq:08d}.asz"

    assert replaced_by(SESSION, path, newest) == (seq <= newest.replaces)
    assert not replaced_by(SESSION, f"{SESSION}/extent-{seq:08d}", newest)
    assert not replaced_by(OTHER, path, newest)
