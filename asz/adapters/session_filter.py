"""Which sessions are collected, judged the same way for transcripts and provider bodies.

A session is judged by the project directory of its main transcript (the directory Claude
Code names after the launch cwd). Patterns:

- ``/real/path`` names a directory by the path it was launched in, encoded the way Claude
  Code encodes a cwd (every character outside ``[A-Za-z0-9]`` becomes ``-``);
  ``/real/path/**`` also names every directory whose name starts with that encoding plus
  ``-`` (the subdirectories, and unavoidably siblings such as ``/real/path-2``, since the
  encoding cannot be undone);
- anything else is a glob (``fnmatch``, case-sensitive) matched against the encoded directory
  name, or against any ``cwd`` the session's lines carry.

An empty include list includes everything; an exclude wins over an include. A session whose
main transcript is not known (pruned before it landed, or never written) is judged by every
directory its transcripts were found in or landed from, and is excluded only when every one of
them is. A session nothing names a directory for waits: the next pass may know more.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from fnmatch import fnmatchcase

from asz.adapters.discovery import DiscoveredSession, discover, peek_cwds
from asz.bodykeys import is_session_id
from asz.config import Config
from asz.store import SessionFacts, Store

__all__ = ["Matcher", "Pattern", "SessionJudge", "Verdict", "encode_cwd", "landed_admits"]

_OUTSIDE_NAME = re.compile(r"[^A-Za-z0-9]")
_TREE_SUFFIX = "/**"


class Verdict(Enum):
    COLLECT = "collect"
    EXCLUDE = "exclude"
    WAIT = "wait"


def encode_cwd(path: str) -> str:
    """The project directory name Claude Code files a session launched in ``path`` under."""
    return _OUTSIDE_NAME.sub("-", path)


class Pattern:
    """One include or exclude entry."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.real_path = text.startswith("/")
        self.tree = self.real_path and text.endswith(_TREE_SUFFIX)
        base = text[: -len(_TREE_SUFFIX)] if self.tree else text
        if self.real_path and len(base) > 1:
            base = base.rstrip("/")
        self.encoded = encode_cwd(base) if self.real_path else ""

    def matches_dir(self, directory: str) -> bool:
        if not self.real_path:
            return fnmatchcase(directory, self.text)
        if directory == self.encoded:
            return True
        return self.tree and directory.startswith(self.encoded + "-")

    def matches_cwd(self, cwd: str) -> bool:
        return not self.real_path and fnmatchcase(cwd, self.text)


class Matcher:
    """The include and exclude lists, applied to one directory and the session's cwds."""

    def __init__(self, include: Sequence[str], exclude: Sequence[str]) -> None:
        self.include = [Pattern(text) for text in include]
        self.exclude = [Pattern(text) for text in exclude]

    def passes(self, directory: str, cwds: Callable[[], set[str]]) -> bool:
        """Whether a session filed under ``directory`` is collected.

        ``cwds`` is called only when a cwd could change the answer (it may read files).
        """
        if self.include and not _any_match(self.include, directory, cwds):
            return False
        return not _any_match(self.exclude, directory, cwds)


def _any_match(patterns: list[Pattern], directory: str, cwds: Callable[[], set[str]]) -> bool:
    if any(pattern.matches_dir(directory) for pattern in patterns):
        return True
    globs = [pattern for pattern in patterns if not pattern.real_path]
    return bool(globs) and any(pattern.matches_cwd(cwd) for pattern in globs for cwd in cwds())


class SessionJudge:
    """Verdicts for one pass; each session is judged once and the verdict kept.

    ``discovered`` is this pass's discovery when the caller already ran it; otherwise the
    projects directories are scanned on first use (its errors are the transcript adapter's to
    report, not the judge's).
    """

    def __init__(
        self,
        config: Config,
        store: Store,
        discovered: Mapping[str, DiscoveredSession] | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.matcher = Matcher(config.sessions.include, config.sessions.exclude)
        self._discovered = discovered
        self._verdicts: dict[str, Verdict] = {}

    @property
    def discovered(self) -> Mapping[str, DiscoveredSession]:
        if self._discovered is None:
            self._discovered = discover(*self.config.projects_dirs).sessions
        return self._discovered

    def judge(self, session: str) -> Verdict:
        """COLLECT, EXCLUDE, or WAIT when nothing names a directory for the session yet.

        An id not in Claude Code's session form can never name a directory: EXCLUDE.
        """
        verdict = self._verdicts.get(session)
        if verdict is None:
            verdict = self._judge(session)
            self._verdicts[session] = verdict
        return verdict

    def _judge(self, session: str) -> Verdict:
        if not is_session_id(session):
            return Verdict.EXCLUDE
        found = self.discovered.get(session)
        landed: SessionFacts | None = None

        def facts() -> SessionFacts:
            nonlocal landed
            if landed is None:
                landed = self.store.open_session(session).facts()
            return landed

        peeked: set[str] | None = None

        def cwds() -> set[str]:
            nonlocal peeked
            if peeked is None:
                peeked = set(facts().cwds)
                if found is not None:
                    peeked |= peek_cwds(found.sources)
            return peeked

        primary = found.primary_dir if found is not None else None
        if primary is None:
            primary = facts().primary_dir
        if primary is not None:
            return Verdict.COLLECT if self.matcher.passes(primary, cwds) else Verdict.EXCLUDE
        dirs = set(facts().project_dirs)
        if found is not None:
            dirs |= found.dirs
        if not dirs:
            return Verdict.WAIT
        if any(self.matcher.passes(directory, cwds) for directory in sorted(dirs)):
            return Verdict.COLLECT
        return Verdict.EXCLUDE


def landed_admits(config: Config, store: Store) -> Callable[[str], bool | None]:
    """The filter's verdict on a landed session, judged by what landed alone (the Claude Code
    directories are not read): True to collect, False excluded, None waiting. What ``asz push``
    pushes, so a session the filter excludes now never leaves the machine, whenever it landed."""
    judge = SessionJudge(config, store, discovered={})
    answers = {Verdict.COLLECT: True, Verdict.EXCLUDE: False, Verdict.WAIT: None}
    return lambda session: answers[judge.judge(session)]
