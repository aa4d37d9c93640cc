"""The rules: what a secret or a piece of identity looks like in a decoded string.

Secrets come from ``detect-secrets``' plugins, their own regular expressions used directly
(its per-line file machinery would cost a line split and a plugin walk per string, where a
body holds thousands of strings); what it lacks is added here in the same form: Anthropic
keys and OAuth tokens, Google and Azure keys, database URLs with a password. Each rule names
the literal anchors one of which every match holds, so a string with none of them is not
given to its expressions at all: most strings carry no anchor of most rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from detect_secrets.filters.heuristic import (
    is_not_alphanumeric_string,
    is_potential_uuid,
    is_sequential_string,
    is_templated_secret,
)
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.stripe import StripeDetector

__all__ = [
    "ALL_RULES",
    "IDENTITY_RULES",
    "INSTRUCTIONS_RULE",
    "RULES",
    "RULE_NAMES",
    "Rule",
    "Span",
]

Span = tuple[int, int]
"""Where a found value sits in the decoded string: [start, end)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of value: its name (in markers and counts), where it comes from, the literal
    anchors that gate it (any one present; compared lowered when ``fold``), and its finder."""

    name: str
    kind: str
    """"secret", "identity" or "withheld"."""
    source: str
    anchors: tuple[str, ...]
    fold: bool
    find: Callable[[str], Iterator[Span]]


def _spans(
    patterns: tuple[re.Pattern[str], ...],
    group: int = 0,
    check: Callable[[str], bool] | None = None,
) -> Callable[[str], Iterator[Span]]:
    """A finder giving each match's ``group`` (or the whole match when it has no such group
    or the group did not take part), kept when ``check`` says the value is one."""

    def find(text: str) -> Iterator[Span]:
        for pattern in patterns:
            for match in pattern.finditer(text):
                which = group if group and match.lastindex and match.start(group) >= 0 else 0
                start, end = match.span(which)
                if end > start and (check is None or check(text[start:end])):
                    yield start, end

    return find


def _compiled(*patterns: str, flags: int = 0) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern, flags) for pattern in patterns)


# --- secrets, from detect-secrets' plugins -------------------------------------------------

_PRIVATE_KEY_END = re.compile(r"-----END [A-Z0-9 ]*-----|---- END SSH2[^\n]*|Private-MAC: \S+")


def _private_keys(text: str) -> Iterator[Span]:
    """From a header detect-secrets knows to the block's end line (or the string's end): the
    plugin finds only the header, and the key is the lines below it."""
    for pattern in PrivateKeyDetector.denylist:
        for match in pattern.finditer(text):
            start = text.rfind("-----", 0, match.start())
            start = start if start >= 0 and match.start() - start <= 5 else match.start()
            end = _PRIVATE_KEY_END.search(text, match.end())
            yield start, end.end() if end else len(text)


def _jwt(value: str) -> bool:
    return "." in value and bool(JwtTokenDetector.is_formally_valid(value))


_BASE64 = Base64HighEntropyString()
_HEX_ONLY = re.compile(r"[0-9a-fA-F-]+")
_ID_PREFIX = re.compile(r"(?:toolu|srvtoolu|msg|req|call|file|chatcmpl|evt|run|sess)_|chatcmpl-")
ENTROPY_LIMIT = 4.5
ENTROPY_LENGTHS = (24, 200)
"""A quoted value this long at least and at most is weighed: shorter ones cannot reach the
limit, longer ones are images and signatures, not credentials."""


def _high_entropy(text: str) -> Iterator[Span]:
    """detect-secrets' quoted base64-charset strings above its entropy limit, less the near
    misses these bodies are full of: hex digests and UUIDs, and API object ids."""
    low, high = ENTROPY_LENGTHS
    for match in _BASE64.regex.finditer(text):
        value = match.group(2)
        if not low <= len(value) <= high or _HEX_ONLY.fullmatch(value):
            continue
        if _ID_PREFIX.match(value) or is_potential_uuid(value) or is_sequential_string(value):
            continue
        if _BASE64.calculate_shannon_entropy(value) > ENTROPY_LIMIT:
            yield match.span(2)


_KEYWORD_PATTERNS = tuple(QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items())
_PLACEHOLDER = re.compile(
    r"[$<{%*.]|x{4}|your|example|changeme|placeholder|redacted|demo|dummy|fake|sample|test",
    re.IGNORECASE,
)
"""A value that starts so is a placeholder (``'demo_key'``, ``'your-token-here'``)."""


_KEYWORD_NEAR = re.compile(
    r"(?:key|pass|pwd|secret|token|contrase)[A-Za-z0-9_-]*[\]'\"]{0,2}[ \t]*"
    r"(?:[=:!]|[^\s]{0,50}?[ \t]*['\"])"
)
KEYWORD_WINDOW = (80, 320)
"""Characters before and after a secret-sounding name that its expressions are run on."""


def _keyword(text: str) -> Iterator[Span]:
    """detect-secrets' assignments to a secret-sounding name, the forms with quotes (the
    forms without them fire on prose such as "tokens: 12"), less its heuristic filters'
    false positives and placeholders. Its expressions run on a window around each name
    followed by an assignment, not over a whole file's text."""
    before, after = KEYWORD_WINDOW
    windows: list[list[int]] = []
    for near in _KEYWORD_NEAR.finditer(text):
        start, end = max(0, near.start() - before), near.end() + after
        if windows and start <= windows[-1][1]:
            windows[-1][1] = end  # overlapping windows are read as one
        else:
            windows.append([start, end])
    seen: set[Span] = set()
    for offset, end in windows:
        window = text[offset:end]
        for pattern, group in _KEYWORD_PATTERNS:
            for match in pattern.finditer(window):
                value = match.group(group)
                if len(value) < 6 or _PLACEHOLDER.match(value) or "«" in value:
                    continue
                if is_templated_secret(value) or is_not_alphanumeric_string(value):
                    continue
                span = (offset + match.start(group), offset + match.end(group))
                if span not in seen:
                    seen.add(span)
                    yield span


# --- secrets detect-secrets lacks ----------------------------------------------------------

_DB_URL = re.compile(
    r"\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver)"
    r"://[^\s:/@\"'«]*:([^\s@/\"'«]+)@",
    re.IGNORECASE,
)
_AZURE = re.compile(
    r"(?:AccountKey|SharedAccessKey|SharedAccessSignature)=([A-Za-z0-9+/=%]{20,})"
    r"|azure[A-Za-z0-9_]*(?:key|secret)[\"']?\s*[=:]\s*[\"']?([A-Za-z0-9+/=_-]{32,})",
    re.IGNORECASE,
)


def _azure(text: str) -> Iterator[Span]:
    for match in _AZURE.finditer(text):
        group = 1 if match.start(1) >= 0 else 2
        yield match.span(group)


# --- identity ------------------------------------------------------------------------------

_HOME = re.compile(r"(?:/home/|/Users/|[A-Za-z]:\\{1,2}Users\\{1,2})([^/\\\s\"'«»:*?<>|]+)")
_ENCODED_HOME = re.compile(r"/projects/-(?:home|Users)-([^-/\\\s\"'«»:*?<>|]+)")
"""A home in the name Claude Code gives a project's folder (``-Users-<name>-code-x``): the
name is taken to the first dash, which a name with a dash in it keeps the rest of."""
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
EMAIL_KEPT = frozenset({"noreply@anthropic.com"})
EMAIL_KEPT_LOCAL = frozenset({"git"})
"""Addresses that are no one's: Claude Code's commit trailer, ssh remotes (``git@host``)."""


def _email(value: str) -> bool:
    local = value.rpartition("@")[0]
    return value.lower() not in EMAIL_KEPT and local not in EMAIL_KEPT_LOCAL


_USER_ID = re.compile(
    r"user_([0-9a-f]{64})_account_([0-9a-fA-F-]{36})?_session_"
    r"|\"device_id\"\s*:\s*\"([0-9a-f]{64})\""
    r"|\"account_uuid\"\s*:\s*\"([0-9a-fA-F-]{36})\""
)


def _user_id(wanted: tuple[int, ...]) -> Callable[[str], Iterator[Span]]:
    """The device id (groups 1, 3) or the account id (2, 4) of ``metadata.user_id`` in any of
    its forms: ``user_<hex>_account_<uuid>_session_<uuid>``, or the JSON it became in 2.1.78
    (the session id stays: it is what joins a body to its transcripts)."""

    def find(text: str) -> Iterator[Span]:
        for match in _USER_ID.finditer(text):
            for group in wanted:
                if match.start(group) >= 0:
                    yield match.span(group)

    return find


_HOST = re.compile(
    r"(?im)^[ \t]*(?:(?:static |transient |pretty )?hostname|host name|host|machine name"
    r"|computer name)[ \t]*:[ \t]*([^\s<]+)"
)


# --- withheld text -------------------------------------------------------------------------

_INSTRUCTIONS = re.compile(
    r"(?:Contents of|Instructions from:?) [^\n]*?(?:CLAUDE(?:\.local)?\.md|memory[^\n]*?)"
    r"[^\n]*\n+(.*?)(?=\n+Contents of |\n+# currentDate|\n*</system-reminder>|\n*<env>|\Z)",
    re.DOTALL | re.IGNORECASE,
)


def _instructions(text: str) -> Iterator[Span]:
    for match in _INSTRUCTIONS.finditer(text):
        if match.end(1) > match.start(1):
            yield match.span(1)


DS = "detect-secrets"
OURS = "asz"

SECRET_RULES: tuple[Rule, ...] = (
    Rule(
        "private-key",
        "secret",
        f"{DS} PrivateKeyDetector",
        ("PRIVATE KEY", "PuTTY-User-Key"),
        False,
        _private_keys,
    ),
    Rule(
        "anthropic-key",
        "secret",
        OURS,
        ("sk-ant-api",),
        False,
        _spans(_compiled(r"sk-ant-api\d\d-[A-Za-z0-9_-]{20,}")),
    ),
    Rule(
        "anthropic-admin-key",
        "secret",
        OURS,
        ("sk-ant-admin",),
        False,
        _spans(_compiled(r"sk-ant-admin\d\d-[A-Za-z0-9_-]{20,}")),
    ),
    Rule(
        "claude-oauth-token",
        "secret",
        OURS,
        ("sk-ant-oat", "sk-ant-ort"),
        False,
        _spans(_compiled(r"sk-ant-o(?:at|rt)\d\d-[A-Za-z0-9_-]{20,}")),
    ),
    Rule(
        "openai-key",
        "secret",
        f"{DS} OpenAIDetector",
        ("T3BlbkFJ",),
        False,
        _spans(tuple(OpenAIDetector.denylist)),
    ),
    Rule(
        "aws-access-key",
        "secret",
        f"{DS} AWSKeyDetector",
        ("A3T", "ABIA", "ACCA", "AKIA", "ASIA"),
        False,
        _spans(AWSKeyDetector.denylist[:1]),
    ),
    Rule(
        "aws-secret-key",
        "secret",
        f"{DS} AWSKeyDetector",
        ("aws",),
        True,
        _spans(AWSKeyDetector.denylist[1:], group=1),
    ),
    Rule(
        "github-token",
        "secret",
        f"{DS} GitHubTokenDetector",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        False,
        _spans(tuple(GitHubTokenDetector.denylist)),
    ),
    Rule(
        "gitlab-token",
        "secret",
        f"{DS} GitLabTokenDetector",
        (
            "glpat-",
            "gldt-",
            "glft-",
            "glsoat-",
            "glrt-",
            "GR1348941",
            "glcbt-",
            "glimt-",
            "glptt-",
            "glagent-",
            "gloas-",
        ),
        False,
        _spans(tuple(GitLabTokenDetector.denylist)),
    ),
    Rule(
        "slack-token",
        "secret",
        f"{DS} SlackDetector",
        ("xox", "hooks.slack.com"),
        True,
        _spans(tuple(SlackDetector.denylist)),
    ),
    Rule(
        "stripe-key",
        "secret",
        f"{DS} StripeDetector",
        ("k_live_",),
        False,
        _spans(tuple(StripeDetector.denylist)),
    ),
    Rule(
        "google-api-key",
        "secret",
        OURS,
        ("AIza",),
        False,
        _spans(_compiled(r"AIza[0-9A-Za-z_-]{35}")),
    ),
    Rule(
        "azure-key",
        "secret",
        f"{OURS}, after {DS} AzureStorageKeyDetector",
        ("accountkey", "sharedaccess", "azure"),
        True,
        _azure,
    ),
    Rule(
        "jwt",
        "secret",
        f"{DS} JwtTokenDetector",
        ("eyJ",),
        False,
        _spans(tuple(JwtTokenDetector.denylist), check=_jwt),
    ),
    Rule("database-url", "secret", OURS, ("://",), False, _spans((_DB_URL,), group=1)),
    Rule(
        "basic-auth",
        "secret",
        f"{DS} BasicAuthDetector",
        ("://",),
        False,
        _spans(tuple(BasicAuthDetector.denylist), group=1),
    ),
    Rule(
        "keyword",
        "secret",
        f"{DS} KeywordDetector",
        ("key", "pass", "pwd", "secret", "token", "contrase"),
        False,
        _keyword,
    ),
    Rule(
        "high-entropy", "secret", f"{DS} Base64HighEntropyString", ('"', "'"), False, _high_entropy
    ),
)

IDENTITY_RULES_TABLE: tuple[Rule, ...] = (
    Rule("device-id", "identity", OURS, ("user_", "device_id"), False, _user_id((1, 3))),
    Rule("account-id", "identity", OURS, ("_account_", "account_uuid"), False, _user_id((2, 4))),
    Rule("email", "identity", OURS, ("@",), False, _spans((_EMAIL,), check=_email)),
    Rule(
        "user",
        "identity",
        OURS,
        ("/home/", "/Users/", "\\Users\\", "/projects/-"),
        False,
        _spans((_HOME, _ENCODED_HOME), group=1),
    ),
    Rule(
        "hostname",
        "identity",
        OURS,
        ("host", "machine name", "computer name"),
        True,
        _spans((_HOST,), group=1),
    ),
)

INSTRUCTIONS_RULE = Rule(
    "withheld-instructions", "withheld", OURS, ("claude.md", "memory"), True, _instructions
)

ALL_RULES = SECRET_RULES + IDENTITY_RULES_TABLE
RULES = {rule.name: rule for rule in ALL_RULES}
RULE_NAMES = tuple(RULES)
IDENTITY_RULES = tuple(rule.name for rule in IDENTITY_RULES_TABLE)
