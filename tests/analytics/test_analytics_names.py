"""The file names of the tables, and the rule a reader counts files by: whatever passes,
compactions and crashes between a compaction's write and its removals left, every pass's
rows are counted once."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from asz.analytics.names import Part, counted, parse_part, part_path

MACHINES = ("0123456789abcdef", "fedcba9876543210")


@given(
    st.sampled_from(("calls", "sessions", "breaks")),
    st.dates().map(lambda day: day.isoformat()),
    st.sampled_from(MACHINES),
    st.integers(1, 10**9),
    st.integers(0, 10**6),
)
def test_a_part_s_name_reads_back_as_the_part(
    table: str, day: str, machine: str, first: int, more: int
) -> None:
    part = Part(table, day, machine, first, first + more)
    assert parse_part(part.path) == part
    assert parse_part(part_path(table, day, machine, first)) == Part(
        table, day, machine, first, first
    )


@given(st.text(max_size=80))
def test_any_other_name_is_no_part(name: str) -> None:
    found = parse_part(name)
    assert found is None or found.path == name


Step = tuple[str, int, bool]


@given(
    st.lists(
        st.tuples(st.sampled_from(("pass", "compact")), st.integers(0, 1), st.booleans()),
        max_size=40,
    )
)
def test_each_pass_is_counted_once_whatever_compactions_left(steps: list[Step]) -> None:
    """``compact``: a machine merges its counted files of the day into one; with ``stopped``
    it stops before removing them (a crash), and its next compaction removes what is
    covered, as the writer does."""
    files: set[Part] = set()
    written: dict[str, set[int]] = {machine: set() for machine in MACHINES}
    number = dict.fromkeys(MACHINES, 0)
    for action, who, stopped in steps:
        machine = MACHINES[who]
        mine = {part for part in files if part.machine == machine}
        if action == "pass":
            number[machine] += 1
            files.add(Part("calls", "2026-12-01", machine, number[machine], number[machine]))
            written[machine].add(number[machine])
            continue
        files -= mine - set(counted(mine))  # what an earlier compaction left
        shown = counted(mine)
        if len(shown) < 2:
            continue
        merged = Part(
            "calls",
            "2026-12-01",
            machine,
            min(part.first for part in shown),
            max(part.last for part in shown),
        )
        files.add(merged)
        if not stopped:
            files -= set(shown)
    for machine in MACHINES:
        seen: list[int] = []
        for part in counted(files):
            if part.machine == machine:
                seen += [n for n in range(part.first, part.last + 1) if n in written[machine]]
        assert sorted(seen) == sorted(written[machine])
