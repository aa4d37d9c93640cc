"""What the user types and what the model says in prose: prompts, answers, agent briefs and
reports, titles and compaction summaries."""

from __future__ import annotations

import random

from asz.synth.catalog import SUMMARY_CLOSING, SUMMARY_PREAMBLE, fill
from asz.synth.project import Noun, Project

__all__ = [
    "AGENT_TASK",
    "ANSWERS",
    "PROMPTS",
    "TITLES",
    "agent_report",
    "agent_task",
    "answer",
    "compaction_summary",
    "prompt",
    "summary_message",
    "title",
]

PROMPTS = (
    "The totals for {words} are off by a cent when some of them were created with a different "
    "rounding mode. Can you find where that happens and fix it?",
    "Add keyset pagination to the {words} listing endpoint, the same way the repository already "
    "pages by created_at and id.",
    "Why does the nightly expiry job cancel {words} that were updated a minute before? Look at "
    "expire_stale in services/{plural}.py.",
    "Write tests for the {singular} state transitions, including the final states and the "
    "currency check in total().",
    "Make {singular} creation idempotent with the Idempotency-Key header; a retried POST must "
    "return the first result.",
    "Run the unit tests for the {words} service and fix whatever fails.",
    "Explain how {words} get from draft to settled. Don't change anything yet.",
    "Rename `{field}` to something clearer across the {words} code and the API schema.",
    "Check the {words} repository for queries that will be slow on big accounts.",
    "Summarise what changed on this branch so far, then tidy up the {singular} logging.",
)
ANSWERS = (
    "Fixed. `total()` in `src/{package}/services/{plural}.py` added the amounts and never "
    "rounded, so a list that mixed values with three decimals came out a cent off once the "
    "dashboard rounded each line. It now keeps full precision while adding and rounds once, "
    "with banker's rounding, to the currency's minor unit (`Money.minor_unit`, which knows "
    "that JPY has none).\n\nI added `tests/unit/services/test_{plural}_rounding.py` with the "
    "case from the report and a property test that the total of any split equals the total "
    "of the whole. `make test` passes. Worth checking: the CSV export rounds on its own in "
    "`exports.py`; I left it alone because it is outside this change.",
    "Done. The listing now pages by `(created_at, id)` instead of OFFSET: the client passes "
    "the last id it saw as `after`, and the repository fetches the anchor row to build the "
    "condition. Deep pages no longer scan everything before them. The response gained a "
    "`next` cursor and lost `page`, which is a breaking change for API clients, so I noted it "
    "under Unreleased in CHANGELOG.md. Tests cover the first page, a middle page, the last "
    "page and an unknown cursor.",
    "The job compares `updated_at` with a cutoff computed once at the start, but it reads "
    "drafts in batches of 500 and a batch can take minutes on a big account. A {singular} "
    "touched after the job started still matches the old snapshot and gets cancelled. "
    "I changed `list_drafts_before` to re-check `updated_at` in the UPDATE itself, so a row "
    "changed in the meantime is skipped, and added a test that updates a draft between two "
    "batches.",
    "Here is the flow. A {singular} starts as `draft` when it is created, moves to `pending` "
    "once the account confirms it, and to `{status}` when the provider acknowledges it. "
    "From there it ends in one of the final states: `settled` when the money moves, "
    "`cancelled` by a user or by the nightly expiry, `failed` when the provider refuses. "
    "Only `transition()` changes the state; it refuses moves out of a final state because "
    "the ledger has booked them already. I changed nothing.",
)
TITLES = (
    "Fix {singular} rounding in totals",
    "Keyset pagination for {words}",
    "Stop expiry job cancelling fresh {words}",
    "Tests for {singular} state transitions",
    "Idempotent {singular} creation",
    "Repair failing {singular} service tests",
)
AGENT_TASK = (
    "Find every place in {cwd} where {words} change state outside of "
    "src/{package}/services/{plural}.py: route handlers, jobs, repositories and scripts. For "
    "each one give the absolute path and line, the states involved, and whether it goes "
    "through transition() or writes the status directly. I'm deciding whether direct writes "
    "can be removed, so also note any that look deliberate (migrations, admin tools). "
    "Thoroughness: medium. Report in under 300 words; do not change any files."
)


def _values(project: Project, noun: Noun) -> dict[str, str]:
    return {
        "words": noun.words,
        "plural": noun.plural,
        "singular": noun.singular,
        "field": noun.field,
        "status": noun.status,
        "package": project.package,
        "cwd": project.cwd,
    }


def prompt(rng: random.Random, project: Project, noun: Noun) -> str:
    return fill(rng.choice(PROMPTS), **_values(project, noun))


def answer(rng: random.Random, project: Project, noun: Noun) -> str:
    return fill(rng.choice(ANSWERS), **_values(project, noun))


def title(rng: random.Random, noun: Noun) -> str:
    return fill(rng.choice(TITLES), words=noun.words, singular=noun.singular)


def agent_task(project: Project, noun: Noun) -> str:
    return fill(AGENT_TASK, **_values(project, noun))


def agent_report(rng: random.Random, project: Project, noun: Noun) -> str:
    """The subagent's final answer, which also comes back to the parent as the tool result."""
    lines = [
        f"Found {noun.words} state changes in {rng.randint(5, 9)} places outside the service.\n",
        "**Through `transition()` (fine):**",
    ]
    for area in ("api/routes", "jobs", "api/routes"):
        lines.append(
            f"- {project.path(f'src/{project.package}/{area}/{noun.plural}.py')}:"
            f"{rng.randint(20, 200)} - `{rng.choice(('pending', 'cancelled', noun.status))}` "
            f"via `{noun.plural}.transition()`"
        )
    lines.append("\n**Direct writes to `status`:**")
    for area, why in (
        ("db/repositories", "bulk cancel in `expire_stale`, bypasses the final-state check"),
        ("tools", "admin script `force_settle`, deliberate, logs an audit event"),
        ("jobs", "webhook retry marks `failed` with a raw UPDATE"),
    ):
        lines.append(
            f"- {project.path(f'src/{project.package}/{area}/{noun.plural}.py')}:"
            f"{rng.randint(20, 200)} - {why}"
        )
    lines.append(
        "\nMigrations under migrations/versions/ also set statuses in two data migrations; "
        "those are one-off and should stay. The two non-deliberate direct writes can go "
        f"through `transition()`; the bulk one needs a batch variant to stay fast. No other "
        f"module imports `{noun.singular}_status` directly."
    )
    return "\n".join(lines)


def compaction_summary(
    project: Project, prompts: list[str], touched: list[str], current: str
) -> str:
    """The text of the summary answer (analysis and summary sections)."""
    files = (
        "\n".join(f"   - {project.path(path)}" for path in dict.fromkeys(touched)) or "   - none"
    )
    asked = "\n".join(f"    - {text}" for text in prompts)
    return (
        "<analysis>\nThe user works on "
        f"{project.name} ({project.summary}) and asked for {len(prompts)} things in turn; each "
        "was handled by reading the relevant module, running the tests and editing the service. "
        "The user prefers short summaries and British spelling.\n</analysis>\n\n<summary>\n"
        f"1. Requests and intent:\n{asked}\n\n"
        "2. Technical context:\n   - Python 3.12, Starlette, SQLAlchemy 2 (async), PostgreSQL 16\n"
        "   - Money is Decimal plus currency; totals round once at the end\n\n"
        f"3. Files and code:\n{files}\n\n"
        "4. Errors and fixes:\n    - A unit test failed on a one-cent rounding difference; fixed "
        "by rounding once with ROUND_HALF_EVEN.\n\n"
        "5. Problem solving:\n"
        "   Rounding and pagination are done; the expiry race is understood.\n\n"
        f"6. User messages:\n{asked}\n\n"
        "7. Open tasks:\n   - Finish the current request and run `make test`.\n\n"
        f"8. Current work:\n   {current}\n\n"
        "9. Next step:\n   Continue the current request where it stopped.\n</summary>"
    )


def summary_message(summary: str) -> str:
    """The user message that opens the conversation after a compaction."""
    return SUMMARY_PREAMBLE + summary + SUMMARY_CLOSING
