"""What the archive counts of each session, by the push record: the files a policy change holds
back, and what a generation pushed since replaced.

A reader of the bucket counts a session's newest generation (its manifest there) and the
files numbered above what it replaces (``asz.archive.generations``); what it replaced stays
in the bucket, counted by nobody, until ``asz push --prune``. So of the objects the record
says went, only the counted ones matter to a push under a redaction policy: a file that went
under another policy and is still counted would sit beside this policy's files in what a
reader sees, and holds its session back (``other_policy``) until a generation of this policy
replaces it (``asz push --reredact``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from asz.archive.prune import replaced_by
from asz.archive.record import PushRecord
from asz.store import GenerationId, parse_generation_dir, parse_generation_file, parse_landed

__all__ = ["Archived"]


@dataclass(slots=True)
class Archived:
    """The record's paths by session, and each session's generation manifests that went."""

    record: PushRecord
    paths: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    manifests: dict[str, dict[GenerationId, str]] = field(default_factory=lambda: defaultdict(dict))
    """Per session: each generation in the archive -> its manifest's path."""

    @classmethod
    def of(cls, record: PushRecord) -> Archived:
        archived = cls(record)
        for path in record.done:
            session, _, rest = path.partition("/")
            archived.paths[session].append(path)
            generation = parse_generation_file(rest) if "/" not in rest else None
            if generation is not None:
                archived.manifests[session][generation] = path
        return archived

    def sessions(self) -> list[str]:
        return sorted(self.paths)

    def newest(self, session: str) -> GenerationId | None:
        """The session's newest generation in the archive (None: it has none)."""
        held = self.manifests.get(session)
        return max(held) if held else None

    def policy(self, path: str) -> str:
        return self.record.policy.get(path, "")

    def counted(self, session: str) -> list[str]:
        """The session's objects in the archive a reader counts (besides the manifest)."""
        newest = self.newest(session)
        return [
            path
            for path in self.paths.get(session, [])
            if newest is None or not replaced_by(session, path, newest)
        ]

    def other_policy(self, session: str, policy: str) -> list[str]:
        """The session's counted objects that went under another policy than ``policy``."""
        return [path for path in self.counted(session) if self.policy(path) != policy]

    def replaced(self, session: str) -> list[str]:
        """The session's objects its newest generation in the archive replaced."""
        newest = self.newest(session)
        if newest is None:
            return []
        return [path for path in self.paths[session] if replaced_by(session, path, newest)]

    def covers(self, path: str, policy: str) -> bool:
        """Whether the landed file at ``path`` of the root needs no object of its own: it went,
        or the session's newest generation in the archive, of ``policy``, holds it (a
        re-redacted generation holds every file up to its number, under other names)."""
        if path in self.record.done:
            return True
        session = path.split("/", 1)[0]
        newest = self.newest(session)
        if newest is None:
            return False
        manifest = self.manifests[session][newest]
        return self.policy(manifest) == policy and replaced_by(session, path, newest)

    def top(self, paths: list[str]) -> int:
        """The highest number ``paths`` hold: an ordinary file's, or a generation's."""
        highest = 0
        for path in paths:
            parts = path.split("/")
            generation = (parse_generation_file if len(parts) == 2 else parse_generation_dir)(
                parts[1]
            )
            if generation is not None:
                number: int | None = generation.replaces
            else:
                landed = parse_landed("/".join(parts[:-1]), parts[-1])
                number = None if landed is None else landed.seq
            highest = max(highest, number or 0)
        return highest
