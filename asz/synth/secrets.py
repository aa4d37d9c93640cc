"""Planted secrets (``asz synth --secrets``): one value of every kind the redactor must find,
and near misses it must leave alone, in a tool result that the transcripts record and every
later request resends.

The values are drawn from the session's generator in each kind's real shape (a JWT whose
parts decode, a private key block with its end line), so they test the rules, not a list
of known examples. The ground truth names each value, the rule expected to find it, and
where it is.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass
from typing import Any

from asz.synth.ids import Ids
from asz.synth.outputs import Action
from asz.synth.project import Project

__all__ = ["Planted", "identity", "plant"]

_ALNUM = string.ascii_letters + string.digits
_UPPER = string.ascii_uppercase + string.digits
_URLSAFE = _ALNUM + "-_"
_BASE64 = _ALNUM + "+/"


@dataclass(frozen=True)
class Planted:
    """A value and the rule that must find it (None: a near miss no rule may touch)."""

    value: str
    rule: str | None
    kind: str
    needle: str = ""
    """What must not be left after redaction, where it is more than the value (a home path
    whose name alone is replaced); empty: the value."""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "value": self.value,
            "rule": self.rule,
            "needle": self.needle or self.value,
        }


def _draw(rng: random.Random, alphabet: str, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def _b64url(data: dict[str, Any]) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def plant(rng: random.Random, ids: Ids, project: Project) -> tuple[Action, list[Planted]]:
    """The Bash call whose output holds the planted values, and the values."""

    def d(alphabet: str, length: int) -> str:
        return _draw(rng, alphabet, length)

    key_lines = [d(_BASE64, 70) for _ in range(5)]
    private_key = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        + "\n".join(key_lines)
        + "\n-----END OPENSSH PRIVATE KEY-----"
    )
    jwt = ".".join(
        (
            _b64url({"alg": "HS256", "typ": "JWT"}),
            _b64url({"sub": d(string.digits, 10), "iat": 1758186000}),
            d(_URLSAFE, 43),
        )
    )
    secrets = {
        "anthropic-key": "sk-ant-api03-" + d(_URLSAFE, 93) + "AA",
        "anthropic-admin-key": "sk-ant-admin01-" + d(_URLSAFE, 93) + "AA",
        "claude-oauth-token": "sk-ant-oat01-" + d(_URLSAFE, 93) + "AA",
        "claude-refresh-token": "sk-ant-ort01-" + d(_URLSAFE, 93) + "AA",
        "openai-key": "sk-proj-" + d(_ALNUM, 20) + "T3BlbkFJ" + d(_ALNUM, 20),
        "aws-access-key": "AKIA" + d(_UPPER, 16),
        "aws-secret-key": d(_BASE64, 40),
        "github-token": "ghp_" + d(_ALNUM, 36),
        "gitlab-token": "glpat-" + d(_URLSAFE, 20),
        "slack-token": "-".join(
            ("xoxb", d(string.digits, 12), d(string.digits, 13), d(_ALNUM, 24).lower())
        ),
        "stripe-key": "sk_live_" + d(_ALNUM, 24),
        "google-api-key": "AIza" + d(_URLSAFE, 35),
        "azure-key": d(_BASE64, 86) + "==",
        "jwt": jwt,
        "postgres-password": d(_ALNUM, 18),
        "mysql-password": d(_ALNUM, 16),
        "mongodb-password": d(_ALNUM, 20),
        "redis-password": d(_ALNUM, 24),
        "basic-auth-password": d(_ALNUM, 14),
        "keyword": d(_ALNUM, 20),
        "high-entropy": d(_BASE64, 40),
        "private-key": private_key,
    }
    host = f"build-{d(string.ascii_lowercase, 6)}-{d(string.digits, 2)}"
    s = secrets
    output = f"""$ cat .env.local
ANTHROPIC_API_KEY={s["anthropic-key"]}
ANTHROPIC_ADMIN_KEY={s["anthropic-admin-key"]}
CLAUDE_CODE_OAUTH_TOKEN={s["claude-oauth-token"]}
CLAUDE_CODE_REFRESH_TOKEN={s["claude-refresh-token"]}
OPENAI_API_KEY={s["openai-key"]}
AWS_ACCESS_KEY_ID={s["aws-access-key"]}
GITHUB_TOKEN={s["github-token"]}
GITLAB_TOKEN={s["gitlab-token"]}
SLACK_BOT_TOKEN={s["slack-token"]}
STRIPE_SECRET_KEY={s["stripe-key"]}
GOOGLE_API_KEY={s["google-api-key"]}
AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName={project.package}store;AccountKey={s["azure-key"]};EndpointSuffix=core.windows.net
SESSION_JWT={s["jwt"]}
DATABASE_URL=postgres://app:{s["postgres-password"]}@db.internal:5432/{project.package}
LEGACY_DB=mysql://report:{s["mysql-password"]}@10.0.4.7:3306/report
EVENTS_URL=mongodb+srv://events:{s["mongodb-password"]}@cluster0.x1y2z.mongodb.net/events
CACHE_URL=redis://default:{s["redis-password"]}@cache.internal:6379/0
$ cat config/deploy.py
aws_secret_access_key = "{s["aws-secret-key"]}"
password = "{s["keyword"]}"
MIRROR = "https://deploy:{s["basic-auth-password"]}@git.internal/{project.package}.git"
signing = {{"salt": "{s["high-entropy"]}"}}
$ cat ~/.ssh/id_deploy
{s["private-key"]}
$ hostnamectl
 Static hostname: {host}
Hostname: {host}
"""
    near = {
        "uuid": ids.uuid(),
        "sha256": ids.hex(64),
        "git-sha": ids.hex(40),
        "cc_prompt_id": ids.uuid(),
        "tool_use_id": ids.tool_use_id(),
        "message_id": ids.message_id(),
        "request_id": ids.request_id(),
    }
    image = base64.b64encode(rng.getrandbits(8 * 600).to_bytes(600, "big")).decode()
    output += f"""$ cat build/manifest.json
{{"build": "{near["uuid"]}", "sha256": "{near["sha256"]}", "commit": "{near["git-sha"]}",
 "cc_prompt_id": "{near["cc_prompt_id"]}", "tool": "{near["tool_use_id"]}",
 "message": "{near["message_id"]}", "request": "{near["request_id"]}"}}
"""
    planted = [Planted(value, _rule(kind), kind) for kind, value in secrets.items()]
    planted.append(Planted(host, "hostname", "hostname"))
    planted.extend(Planted(value, None, kind) for kind, value in near.items())
    planted.append(Planted(image, None, "base64-image"))
    result: list[dict[str, Any]] = [
        {"type": "text", "text": output},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image}},
    ]
    action = Action(
        name="Bash",
        input={
            "command": "cat .env.local config/deploy.py ~/.ssh/id_deploy; hostnamectl",
            "description": "Show the deployment settings",
        },
        result=result,
        structured={"stdout": output, "stderr": "", "interrupted": False, "isImage": False},
        lead="Checking the deployment settings.",
    )
    return action, planted


def _rule(kind: str) -> str:
    if kind.endswith("-password") and kind != "basic-auth-password":
        return "database-url"
    return {"claude-refresh-token": "claude-oauth-token", "basic-auth-password": "basic-auth"}.get(
        kind, kind
    )


def identity(project: Project, device_id: str, account_uuid: str) -> list[Planted]:
    """The identity every capture carries: the user_id's ids, the email, the home's name."""
    return [
        Planted(device_id, "device-id", "device-id"),
        Planted(account_uuid, "account-id", "account-id"),
        Planted(project.email, "email", "email"),
        Planted(project.first, "user", "user", needle=f"{project.home}/"),
    ]
