"""The made-up repository a synthetic session works in: names, paths, sources, git state.

Each session gets its own project, so reminders, tool results and the environment block
differ between sessions while the tool list and the fixed prompt text stay shared, as they
do in real captures.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from asz.synth.catalog import fill, sections
from asz.synth.ids import Ids

__all__ = [
    "AREAS",
    "COMMIT_SUBJECTS",
    "FIXED_FILES",
    "ISSUES",
    "MEMORIES",
    "NOUNS",
    "PEOPLE",
    "PROJECTS",
    "TOPICS",
    "Noun",
    "Project",
]


@dataclass(frozen=True)
class Noun:
    """A domain object of the project, spelled the ways code and prose need it."""

    plural: str
    singular: str
    field: str
    status: str

    @property
    def words(self) -> str:
        return self.plural.replace("_", " ")

    @property
    def title(self) -> str:
        return "".join(part.capitalize() for part in self.singular.split("_"))


NOUNS = (
    Noun("invoices", "invoice", "due_date", "sent"),
    Noun("payments", "payment", "provider_ref", "authorized"),
    Noun("refunds", "refund", "reason", "requested"),
    Noun("settlements", "settlement", "bank_ref", "batched"),
    Noun("disputes", "dispute", "evidence_url", "under_review"),
    Noun("webhooks", "webhook", "target_url", "queued"),
    Noun("subscriptions", "subscription", "plan_code", "trialing"),
    Noun("coupons", "coupon", "code", "scheduled"),
    Noun("payouts", "payout", "destination", "in_transit"),
    Noun("ledger_entries", "ledger_entry", "memo", "posted"),
    Noun("tax_rates", "tax_rate", "jurisdiction", "proposed"),
    Noun("credit_notes", "credit_note", "invoice_ref", "issued"),
    Noun("mandates", "mandate", "scheme", "pending_signature"),
    Noun("exports", "export", "format", "running"),
    Noun("statements", "statement", "period", "rendering"),
    Noun("chargebacks", "chargeback", "network_code", "contested"),
)

PROJECTS = (
    (
        "ledgerline",
        "the billing backend of a small payments company: it issues invoices, "
        "collects payments and keeps the double-entry ledger.",
    ),
    (
        "tidewater",
        "a reconciliation service that matches bank statements against payouts and "
        "flags the differences for the finance team.",
    ),
    (
        "quillmark",
        "the subscription engine of a publishing platform: plans, trials, coupons "
        "and the invoices that follow from them.",
    ),
    (
        "copperleaf",
        "an internal service that computes taxes, issues credit notes and exports "
        "monthly statements for accounting.",
    ),
    (
        "harborview",
        "the merchant-facing API of a payment processor: charges, refunds, disputes "
        "and the webhooks merchants subscribe to.",
    ),
    (
        "fernhill",
        "a payouts service for a marketplace: it batches seller balances into bank "
        "transfers and tracks them until they land.",
    ),
)
PEOPLE = (
    ("sam", "okafor"),
    ("priya", "raman"),
    ("jonas", "lindqvist"),
    ("mei", "tanaka"),
    ("tomas", "novak"),
    ("aisha", "bello"),
    ("lukas", "brandt"),
    ("noor", "haddad"),
)
TOPICS = (
    "rounding-fix",
    "keyset-pagination",
    "idempotent-create",
    "expire-drafts",
    "currency-guard",
    "retry-budget",
    "audit-trail",
    "batch-export",
)
COMMIT_SUBJECTS = (
    "Refuse transitions out of final states",
    "Page {noun} by keyset instead of offset",
    "Add idempotency keys to {noun} creation",
    "Cancel stale draft {noun} nightly",
    "Log {singular} transitions with the reason",
    "Move {singular} rules out of the handlers",
    "Count {noun} per status for the dashboard",
    "Fix currency check when summing {noun}",
    "Bump sqlalchemy to 2.0.41",
    "Split settings into runtime and deploy parts",
    "Add frozen_clock fixture to integration tests",
    "Document the {noun} endpoints",
)
AREAS = (
    (
        "api/routes/{plural}.py",
        "HTTP endpoints for {words}: list, fetch, create and the state changes the dashboard uses.",
    ),
    (
        "api/schemas/{plural}.py",
        "Request and response schemas of the {singular_words} endpoints; "
        "the only place pydantic models are allowed.",
    ),
    (
        "services/{plural}.py",
        "Rules for {words}: which state changes are allowed, totals per "
        "currency, and the events each change emits.",
    ),
    (
        "db/models/{singular}.py",
        "SQLAlchemy model of the `{plural}` table, its enums and its indexes.",
    ),
    (
        "db/repositories/{plural}.py",
        "Every query and write of {words}, with keyset pagination and "
        "optimistic locking on `updated_at`.",
    ),
    (
        "tests/unit/services/test_{plural}.py",
        "Unit tests of the {singular_words} rules; "
        "factories from `tests/factories.py`, clock frozen.",
    ),
)
FIXED_FILES = (
    ("app.py", "Starlette application factory: middleware, routes, startup and shutdown."),
    ("worker.py", "Entry point of the background worker; registers the jobs and runs the loop."),
    ("money.py", "The `Money` value type: Decimal amount plus ISO currency, parsing and rounding."),
    ("clock.py", "`now()` and helpers for timezone-aware UTC time; frozen in tests."),
    ("errors.py", "Domain exceptions and the HTTP status each one maps to."),
    ("flags.py", "Feature flags with their defaults and the date each was introduced."),
    ("settings.py", "Runtime settings read from the environment, validated at startup."),
    ("db/session.py", "Engine and session factory; `db.session()` is the only way to open one."),
    ("clients/bank.py", "Client of the bank's transfer API with retries and request signing."),
    ("clients/email.py", "Transactional email client; templates live in `templates/email/`."),
)
MEMORIES = (
    ("feedback_no_sleep_in_tests", "Never fix flaky tests with sleeps or retries; find the state"),
    ("project_ledger_invariants", "Ledger entries are append-only; corrections are reversals"),
    ("user_review_style", "Wants short summaries, reads diffs personally, British spelling"),
    ("feedback_migrations", "Stop and ask before any migration that rewrites a large table"),
    ("project_release_train", "Releases go out Tuesdays and Thursdays; freeze is Monday 18:00"),
    ("reference_runbooks", "Runbooks live in docs/runbooks/, one per alert name"),
    ("feedback_uv_only", "Use uv, never pip; lockfile changes go in their own commit"),
    ("project_currency_rules", "JPY and KRW have no minor unit; never assume two decimals"),
    ("user_timezone", "Works from Europe/Berlin; schedule reminders in that zone"),
    ("project_sentry_projects", "Sentry project is 'backend' for API and 'worker' for jobs"),
)
ISSUES = (
    "Totals differ by one cent when {noun} mix rounding modes",
    "Listing {noun} times out for accounts with more than 100k rows",
    "Retried POST /{plural} creates duplicates when the key header is lower-case",
    "Nightly expiry job cancels {noun} that were updated a minute before",
    "Dashboard shows {words} in the wrong currency after a plan change",
    "Webhook for {singular} state changes is sent before the transaction commits",
)


@dataclass(frozen=True)
class Project:
    """Everything about the session's repository that prompts and tool results mention."""

    name: str
    package: str
    summary: str
    first: str
    last: str
    platform: str
    nouns: tuple[Noun, ...]
    branch: str
    commits: tuple[str, ...]
    modified: tuple[str, ...]
    cwd: str

    @classmethod
    def make(cls, rng: random.Random, ids: Ids) -> Project:
        name, summary = rng.choice(PROJECTS)
        first, last = rng.choice(PEOPLE)
        nouns = tuple(rng.sample(NOUNS, 12))
        commits = []
        for _ in range(10):
            noun = rng.choice(nouns)
            subject = fill(rng.choice(COMMIT_SUBJECTS), noun=noun.words, singular=noun.singular)
            commits.append(f"{ids.hex(7)} {subject}")
        modified = tuple(f"src/{name}/services/{noun.plural}.py" for noun in nouns[:2])
        platform = rng.choice(("linux", "darwin"))
        home = f"/Users/{first}" if platform == "darwin" else f"/home/{first}"
        return cls(
            name=name,
            package=name,
            summary=summary,
            first=first,
            last=last,
            platform=platform,
            nouns=nouns,
            branch=f"{first}/{rng.choice(TOPICS)}",
            commits=tuple(commits),
            modified=modified,
            cwd=f"{home}/code/{name}" if platform == "darwin" else f"{home}/src/{name}",
        )

    @property
    def home(self) -> str:
        return f"/Users/{self.first}" if self.platform == "darwin" else f"/home/{self.first}"

    @property
    def email(self) -> str:
        return f"{self.first}.{self.last}@example.com"

    @property
    def shell(self) -> str:
        return "zsh" if self.platform == "darwin" else "bash"

    @property
    def os_version(self) -> str:
        return "Darwin 24.6.0" if self.platform == "darwin" else "Linux 6.8.0-45-generic"

    def path(self, relative: str) -> str:
        return f"{self.cwd}/{relative}"

    def files(self) -> list[tuple[str, str]]:
        """Repository paths with a one-line description each, for the layout section."""
        out = [(f"src/{self.package}/{path}", about) for path, about in FIXED_FILES]
        for noun in self.nouns:
            for path, about in AREAS:
                values = {
                    "plural": noun.plural,
                    "singular": noun.singular,
                    "words": noun.words,
                    "singular_words": noun.singular.replace("_", " "),
                }
                where = fill(path, **values)
                if not where.startswith("tests/"):
                    where = f"src/{self.package}/{where}"
                out.append((where, fill(about, **values)))
        return out

    def layout(self) -> str:
        return "\n".join(f"- `{path}`: {about}" for path, about in self.files())

    def memory_index(self) -> str:
        lines = [
            f"- [{slug.split('_', 1)[1].replace('_', ' ').capitalize()}]({slug}.md) - {hook}"
            for slug, hook in MEMORIES
        ]
        return "\n".join(lines)

    def issues(self) -> list[str]:
        out = []
        for number, (template, noun) in enumerate(zip(ISSUES, self.nouns, strict=False), start=412):
            title = fill(
                template,
                noun=noun.words,
                plural=noun.plural,
                words=noun.words,
                singular=noun.singular,
            )
            out.append(f"#{number} {title}")
        return out

    def git_status(self) -> str:
        return "\n".join(f" M {path}" for path in self.modified)

    def source(self, noun: Noun, kind: str, rng: random.Random) -> str:
        """A plausible module for ``noun``: ``service``, ``repository`` or ``test``."""
        parts = sections("code_templates.txt")
        heads, pieces, tests = parts["head"], parts["piece"], parts["test"]
        values = {
            "package": self.package,
            "noun": noun.plural,
            "singular": noun.singular,
            "Singular": noun.title,
            "field": noun.field,
            "status": noun.status,
        }
        if kind == "test":
            return fill(tests[0], **values)
        if kind == "repository":
            chosen = [piece for piece in pieces if piece.startswith("    ")]
            head = heads[1]
        else:
            chosen = [piece for piece in pieces if not piece.startswith("    ")]
            head = heads[0]
        body = rng.sample(chosen, rng.randint(len(chosen) // 2, len(chosen)))
        return fill(head + "\n" + "\n".join(body), **values)
