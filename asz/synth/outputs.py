"""Tool calls and their results: what the model asks for and what the tools hand back.

Results have the shapes and sizes of real ones (numbered file contents, test runs, search
hits), because body sizes and the long strings a collector cuts out depend on them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import orjson

from asz.synth.catalog import fill, sections
from asz.synth.project import Noun, Project

__all__ = ["AGENT_WEIGHTS", "MAIN_WEIGHTS", "Action", "Workbench", "numbered"]

MAIN_WEIGHTS = (
    ("Read", 38),
    ("Bash", 22),
    ("Grep", 14),
    ("Glob", 4),
    ("Edit", 10),
    ("Write", 4),
    ("TodoWrite", 3),
    ("WebFetch", 3),
    ("mcp__postgres__query", 2),
)
AGENT_WEIGHTS = (("Read", 45), ("Grep", 25), ("Glob", 15), ("Bash", 15))


@dataclass
class Action:
    """One tool call: the input the model sends and the result the harness returns."""

    name: str
    input: dict[str, Any]
    result: str | list[dict[str, Any]]
    structured: Any
    lead: str
    is_error: bool = False
    touched: list[str] = field(default_factory=list)


def numbered(text: str, start: int = 1) -> str:
    """File contents as the Read tool returns them: right-aligned number, arrow, line."""
    lines = text.rstrip("\n").split("\n")
    return "\n".join(f"{start + i:>6}→{line}" for i, line in enumerate(lines))


class Workbench:
    """Produces tool calls on one project, drawing every choice from the session's rng."""

    def __init__(self, project: Project, rng: random.Random) -> None:
        self.project = project
        self.rng = rng
        self.sources: dict[tuple[Noun, str], str] = {}
        """Files read so far: reading a file again returns the same text."""

    def pick(self, weights: tuple[tuple[str, int], ...]) -> str:
        names = [name for name, _ in weights]
        return self.rng.choices(names, weights=[w for _, w in weights])[0]

    def _snippet_text(self, name: str, noun: Noun, **values: str) -> str:
        """A section of tool_snippets.txt with the noun's spellings and ``values`` filled in."""
        template = sections("tool_snippets.txt")[name][0]
        return fill(
            template,
            singular=noun.singular,
            plural=noun.plural,
            Singular=noun.title,
            field=noun.field,
            **values,
        ).rstrip("\n")

    def _snippet(self, name: str, noun: Noun, **values: str) -> list[str]:
        return self._snippet_text(name, noun, **values).split("\n")

    def action(self, name: str, noun: Noun, *, brief: bool = False) -> Action:
        """A call of tool ``name`` about ``noun``; ``brief`` reads files partly, as subagents
        exploring a codebase tend to."""
        if name == "Read":
            return self._read(noun, brief=brief)
        makers = {
            "Bash": self._bash,
            "Grep": self._grep,
            "Glob": self._glob,
            "Edit": self._edit,
            "Write": self._write,
            "TodoWrite": self._todowrite,
            "WebFetch": self._webfetch,
            "mcp__postgres__query": self._postgres,
        }
        return makers[name](noun)

    def _module(self, noun: Noun, kind: str) -> tuple[str, str]:
        folder = {
            "service": "src/{p}/services",
            "repository": "src/{p}/db/repositories",
            "test": "tests/unit/services",
        }[kind].replace("{p}", self.project.package)
        name = f"test_{noun.plural}.py" if kind == "test" else f"{noun.plural}.py"
        if (noun, kind) not in self.sources:
            self.sources[noun, kind] = self.project.source(noun, kind, self.rng)
        return f"{folder}/{name}", self.sources[noun, kind]

    def _read(self, noun: Noun, *, brief: bool) -> Action:
        kind = self.rng.choice(("service", "service", "repository", "test"))
        relative, source = self._module(noun, kind)
        path = self.project.path(relative)
        total = source.count("\n")
        request: dict[str, Any] = {"file_path": path}
        if brief:
            limit = self.rng.randint(40, 60)
            source = "".join(source.splitlines(keepends=True)[:limit])
            request["limit"] = limit
        lines = source.count("\n")
        return Action(
            name="Read",
            input=request,
            result=numbered(source),
            structured={
                "type": "text",
                "file": {
                    "filePath": path,
                    "content": source,
                    "numLines": lines,
                    "startLine": 1,
                    "totalLines": total,
                },
            },
            lead=self.rng.choice(
                (f"Let me read `{relative}`.", f"I'll look at {relative} first.", "")
            ),
            touched=[relative],
        )

    def _bash(self, noun: Noun) -> Action:
        maker = self.rng.choice((self._pytest, self._git_log, self._git_diff, self._ruff))
        command, description, output = maker(noun)
        failed = maker in (self._pytest, self._ruff)
        return Action(
            name="Bash",
            input={"command": command, "description": description},
            result=f"Exit code 1\n{output}" if failed else output,
            structured={"stdout": output, "stderr": "", "interrupted": False, "isImage": False},
            lead=self.rng.choice(("", f"Running `{command.split(' 2>')[0]}`.")),
            is_error=failed,
        )

    def _pytest(self, noun: Noun) -> tuple[str, str, str]:
        target = f"tests/unit/services/test_{noun.plural}.py"
        names = [
            "test_a_final_{s}_cannot_move_again",
            "test_the_total_counts_open_{p}_only",
            "test_mixing_currencies_is_refused",
            "test_describe_keeps_amounts_as_strings",
            "test_transition_logs_the_reason",
            "test_expire_stale_is_idempotent",
            "test_a_draft_{s}_can_be_cancelled",
            "test_unknown_states_are_refused",
            "test_create_refuses_a_negative_amount",
            "test_create_refuses_a_zero_amount",
            "test_a_retried_create_returns_the_first_{s}",
            "test_listing_pages_by_created_at",
            "test_listing_filters_by_status",
            "test_the_last_page_has_no_cursor",
            "test_count_by_status_groups_every_state",
            "test_a_stale_write_is_refused",
            "test_the_dashboard_view_has_no_floats",
            "test_expiry_skips_recent_updates",
        ]
        names = [n.replace("{s}", noun.singular).replace("{p}", noun.plural) for n in names]
        failing = self.rng.choice(names)
        verbose = [
            f"{target}::{n} {'FAILED' if n == failing else 'PASSED'}"
            f"{' ' * max(2, 96 - len(target) - len(n))}[{(i + 1) * 100 // len(names):>3}%]"
            for i, n in enumerate(names)
        ]
        out = [
            "============================= test session starts ==============================",
            "platform linux -- Python 3.12.6, pytest-8.3.3, pluggy-1.5.0",
            f"rootdir: {self.project.cwd}",
            "configfile: pyproject.toml",
            "plugins: anyio-4.6.0, randomly-3.15.0, respx-0.21.1, asyncio-0.24.0",
            f"Using --randomly-seed={self.rng.randrange(10**9)}",
            f"collected {len(names)} items",
            "",
            *verbose,
            "",
            *self._snippet(
                "failure", noun, failing=failing, target=target, line=str(self.rng.randint(20, 90))
            ),
            f"========================= 1 failed, {len(names) - 1} passed in "
            f"{self.rng.uniform(0.4, 3.9):.2f}s =========================",
        ]
        return (
            f"uv run pytest {target} -v 2>&1 | tail -60",
            f"Run the {noun.singular} service unit tests",
            "\n".join(out),
        )

    def _git_log(self, noun: Noun) -> tuple[str, str, str]:
        """``git log --stat``: commits with author, date and the files each one touched."""
        out = []
        for number, commit in enumerate(self.project.commits[:6]):
            sha, subject = commit.split(" ", 1)
            out += [
                f"commit {sha}{self.rng.getrandbits(132):033x}",
                f"Author: {self.project.first.capitalize()} {self.project.last.capitalize()} "
                f"<{self.project.email}>",
                f"Date:   Thu Sep {17 - number} {self.rng.randint(8, 19):02d}:"
                f"{self.rng.randint(0, 59):02d}:{self.rng.randint(0, 59):02d} 2026 +0200",
                "",
                f"    {subject}",
                "",
            ]
            touched = self.rng.sample(self.project.files(), self.rng.randint(2, 5))
            for path, _ in touched:
                plus, minus = self.rng.randint(1, 60), self.rng.randint(0, 30)
                out.append(
                    f" {path:<58} | {plus + minus:>3} {'+' * (plus // 4)}{'-' * (minus // 4)}"
                )
            out += [
                f" {len(touched)} files changed, {self.rng.randint(5, 200)} insertions(+), "
                f"{self.rng.randint(0, 80)} deletions(-)",
                "",
            ]
        return ("git log --stat -6", "Show recent commits with changed files", "\n".join(out))

    def _git_diff(self, noun: Noun) -> tuple[str, str, str]:
        relative = f"src/{self.project.package}/services/{noun.plural}.py"
        start = self.rng.randint(20, 80)
        body = [
            f"diff --git a/{relative} b/{relative}",
            f"index {self.rng.getrandbits(28):07x}..{self.rng.getrandbits(28):07x} 100644",
            f"--- a/{relative}",
            f"+++ b/{relative}",
            *self._snippet("diff", noun, start=str(start)),
        ]
        return (
            f"git diff -- {relative}",
            f"Show uncommitted changes to the {noun.singular} service",
            "\n".join(body),
        )

    def _ruff(self, noun: Noun) -> tuple[str, str, str]:
        relative = f"src/{self.project.package}/services/{noun.plural}.py"
        out = self._snippet(
            "ruff",
            noun,
            relative=relative,
            start=str(self.rng.randint(5, 30)),
            end=str(self.rng.randint(40, 90)),
        )
        return ("uv run ruff check src/", "Lint the source tree", "\n".join(out))

    def _grep(self, noun: Noun) -> Action:
        """Hits of one pattern across the project: each line of the ``grep_lines`` snippet
        is ``<pattern> => <matching line>``."""
        choice = self.rng.randrange(len(self._snippet("grep_lines", noun)))
        pattern = self._snippet("grep_lines", noun)[choice].split(" => ")[0]
        hits = []
        for other in self.rng.sample(self.project.nouns, 8):
            line = self._snippet("grep_lines", other)[choice].split(" => ", 1)[1]
            for _ in range(self.rng.randint(1, 4)):
                area = self.rng.choice(("services", "db/repositories", "api/routes"))
                hits.append(
                    f"src/{self.project.package}/{area}/{other.plural}.py:"
                    f"{self.rng.randint(10, 240)}:    {line}"
                )
        content = "\n".join(hits)
        return Action(
            name="Grep",
            input={"pattern": pattern, "output_mode": "content", "-n": True},
            result=content,
            structured={
                "mode": "content",
                "numFiles": 0,
                "filenames": [],
                "content": content,
                "numLines": len(hits),
            },
            lead=self.rng.choice(("", f"Searching for `{pattern}`.")),
        )

    def _glob(self, noun: Noun) -> Action:
        files = [path for path, _ in self.project.files()]
        chosen = sorted(self.rng.sample(files, self.rng.randint(6, 18)))
        return Action(
            name="Glob",
            input={"pattern": f"src/**/*{noun.plural.split('_')[0]}*.py"},
            result="\n".join(self.project.path(p) for p in chosen),
            structured={
                "filenames": [self.project.path(p) for p in chosen],
                "durationMs": self.rng.randint(4, 60),
                "numFiles": len(chosen),
                "truncated": False,
            },
            lead="",
        )

    def _edit(self, noun: Noun) -> Action:
        relative = f"src/{self.project.package}/services/{noun.plural}.py"
        path = self.project.path(relative)
        old = self._snippet_text("edit_old", noun)
        new = self._snippet_text("edit_new", noun)
        snippet = self._snippet_text("edit_context", noun) + "\n" + new
        start = self.rng.randint(30, 120)
        result = (
            f"The file {path} has been updated. Here's the result of running `cat -n` on a "
            f"snippet of the edited file:\n{numbered(snippet, start)}"
        )
        return Action(
            name="Edit",
            input={"file_path": path, "old_string": old, "new_string": new, "replace_all": False},
            result=result,
            structured={
                "filePath": path,
                "oldString": old,
                "newString": new,
                "structuredPatch": [
                    {
                        "oldStart": start + 4,
                        "oldLines": 3,
                        "newStart": start + 4,
                        "newLines": 3,
                        "lines": [f"-{old.splitlines()[-1]}", f"+{new.splitlines()[-1]}"],
                    }
                ],
                "userModified": False,
                "replaceAll": False,
            },
            lead=self.rng.choice(("Now the fix.", f"Editing `{relative}`.", "")),
            touched=[relative],
        )

    def _write(self, noun: Noun) -> Action:
        relative = f"tests/unit/services/test_{noun.plural}_rounding.py"
        path = self.project.path(relative)
        content = self.project.source(noun, "test", self.rng)
        return Action(
            name="Write",
            input={"file_path": path, "content": content},
            result=f"File created successfully at: {path}",
            structured={
                "type": "create",
                "filePath": path,
                "content": content,
                "structuredPatch": [],
            },
            lead="I'll add a test that pins the behaviour down.",
            touched=[relative],
        )

    def _todowrite(self, noun: Noun) -> Action:
        steps = [
            (f"Reproduce the {noun.singular} problem with a failing test", "completed"),
            (f"Fix the {noun.singular} service", "in_progress"),
            ("Run the unit suite and the linters", "pending"),
        ]
        todos = [
            {
                "content": c,
                "status": s,
                "activeForm": c.replace("Reproduce", "Reproducing")
                .replace("Fix", "Fixing")
                .replace("Run", "Running"),
            }
            for c, s in steps
        ]
        return Action(
            name="TodoWrite",
            input={"todos": todos},
            result="The todo list was updated. Keep it current as you work through the steps.",
            structured={"oldTodos": [], "newTodos": todos},
            lead="",
        )

    def _webfetch(self, noun: Noun) -> Action:
        url = "https://docs.python.org/3/library/decimal.html"
        summary = self._snippet_text("webfetch", noun) + "\n"
        return Action(
            name="WebFetch",
            input={"url": url, "prompt": "How should sums of money be rounded with decimal?"},
            result=summary,
            structured={
                "bytes": 41123,
                "code": 200,
                "codeText": "OK",
                "result": summary,
                "durationMs": self.rng.randint(300, 2500),
                "url": url,
            },
            lead="Let me check the decimal documentation on quantize.",
        )

    def _postgres(self, noun: Noun) -> Action:
        sql = self._snippet_text("sql", noun)
        rows = [
            {
                "status": s,
                "n": self.rng.randint(10, 90000),
                "total": f"{self.rng.uniform(100, 9e6):.6f}",
            }
            for s in ("draft", "pending", noun.status, "settled", "cancelled")
        ]
        text = orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode()
        block = [{"type": "text", "text": text}]
        return Action(
            name="mcp__postgres__query",
            input={"sql": sql},
            result=block,
            structured=block,
            lead=f"Checking how {noun.words} are distributed across states in the dev database.",
        )
