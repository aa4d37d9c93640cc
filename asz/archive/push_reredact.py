"""What goes of a redacted root in a push (``asz.archive.push``): each session's redacted
counterpart (``asz.archive.redacted``) as a reader counts it, made before it goes; a file that
could not be redacted goes neither raw nor at all, and nor does the rest of its session. A
session whose counted files went under another policy (or raw, ``asz.archive.archived``) gets
nothing more: the push names those files, and which of them would now differ, until
``reredact`` publishes the session re-redacted as a new generation beside them.
"""

from __future__ import annotations

import collections
from itertools import pairwise

from asz.archive.archived import Archived
from asz.archive.push_parts import PushParts, Todo
from asz.archive.push_tally import PushTally
from asz.archive.record import PushRecord
from asz.archive.retry import Halted
from asz.store import parse_generation_dir, parse_generation_file

__all__ = ["Reredacting"]


class Reredacting(PushParts):
    """The part of a push that makes what goes of a redacted root, and re-redacts."""

    def _redacting(self, record: PushRecord, todo: list[Todo], tally: PushTally) -> list[Todo]:
        """What goes of ``todo`` once redacted: each session's counterpart as a reader counts
        it (``RedactedRoot.landed``), of the files made (up to the first that failed), except
        in a session the archive counts files of under another policy (or raw): those are
        named, with which of them would now differ, and go only re-redacted (``reredact``)."""
        redacted = self.redacted
        if redacted is None:
            return todo
        tally.policy = policy = redacted.fingerprint
        archived = Archived.of(record)
        judged = set(tally.left_out) | set(tally.not_judged)
        other = {
            session: paths
            for session in archived.sessions()
            if session not in judged and (paths := archived.other_policy(session, policy))
        }
        # A session held back with nothing new is made whole: to say what differs, and to go.
        todo = todo + [
            whole
            for session in sorted(other.keys() - {item.session for item in todo})
            if self.store.has_landed(session) and (whole := self._whole(session)) is not None
        ]
        rules: collections.Counter[str] = collections.Counter()
        going = []
        outcomes = redacted.make_all([(item.session, item.names[-1]) for item in todo])
        for item in todo:
            made = outcomes[item.session]
            rules.update(made.rules)
            if made.failed is not None:
                tally.redaction_failed.append(": ".join(made.failed))
            held = other.get(item.session)
            if held is not None:
                tally.would_differ += [
                    path for path in held if redacted.differs(path, archived.policy(path))
                ]
                if not (
                    self.reredact and made.failed is None and self._reredo(item, archived, tally)
                ):
                    tally.other_policy += held
                    continue
                tally.reredacted.append(item.session)
            ready = {name.path for name in made.ready}
            counted = redacted.landed(item.session)
            names = [
                name
                for name in counted
                if name.path not in record.done and (made.failed is None or name.path in ready)
            ]
            if not names:
                continue
            before = {later.path: earlier for earlier, later in pairwise(counted)}
            going.append(Todo(item.session, names, item.first, before))
            session_rules: collections.Counter[str] = collections.Counter()
            for name in names:
                session_rules.update(redacted.rules(name.path))
            tally.redacted_by_session[item.session] = dict(sorted(session_rules.items()))
        tally.other_policy.sort()
        tally.redactions = dict(sorted(rules.items()))
        return going

    def _whole(self, session: str) -> Todo | None:
        """Every landed file of ``session``, to be made (None: it has none)."""
        names = self.store.open_session(session).landed()
        if not names:
            return None
        return Todo(session, names, names[0], {})

    def _reredo(self, item: Todo, archived: Archived, tally: PushTally) -> bool:
        """Whether the session's counterpart has, or now gets, a generation newer than any the
        archive holds of the session that replaces every file of it the archive counts: its
        mirror of the root's generation when that one is, else one re-redacted up to the
        session's highest number, as a revision of that number above any the archive holds
        (``asz.store.GenerationId``), by the record and by a listing of the session there
        (a record rebuilt knows only what this policy's counterparts found). False when the
        session has fewer numbers than the archive counts (files of it lost here), or its
        listing failed."""
        assert self.redacted is not None
        newest = archived.newest(item.session)
        top = archived.top(archived.counted(item.session))
        generation = self.redacted.generation(item.session)
        if (
            generation is not None
            and (newest is None or generation.id > newest)
            and generation.replaces >= top
        ):
            policy = self.redacted.fingerprint
            went = archived.record.done
            if not any(
                name.path in went and archived.policy(name.path) != policy
                for name in generation.files
            ):
                return True
        highest, _remembered = self.store.numbered(item.session)
        if highest < top:
            return False
        try:
            dirs, objects = self.bucket.list_dir(item.session)
        except Halted:
            raise
        except Exception as err:
            self._failed(tally, f"{self.url.key(item.session)}/ (listing)", err)
            return False
        listed = [
            *map(parse_generation_dir, dirs),
            *(parse_generation_file(meta.path.rsplit("/", 1)[-1]) for meta in objects),
            *archived.manifests.get(item.session, {}),
        ]
        held = [g.revision for g in listed if g is not None and g.replaces == highest]
        self.redacted.reredact(item.session, highest, above=max(held, default=0))
        return True
