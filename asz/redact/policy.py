"""The ``[redact]`` section of the config, parsed and checked, and its fingerprint.

A policy is what decides the bytes a redactor writes: which rules run, which parts are
withheld whole, which identity options apply, and the key. Its fingerprint digests all of
that (the key only through a digest of its own), so a landed file redacted under one policy
can be told from one redacted under another without keeping either the key or the rules.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

from asz.redact.rules import IDENTITY_RULES, RULE_NAMES

__all__ = ["POLICY_VERSION", "WITHHOLD_CLASSES", "Policy"]

WITHHOLD_CLASSES = ("system", "tools", "instructions", "tool-results")
"""What may be withheld whole: the system prompt, the tool schemas, instruction files
(CLAUDE.md and memory content in reminder blocks), every tool result."""

SETTINGS_KEYS = ("enabled", "disable", "withhold", "home_paths", "key")
POLICY_VERSION = 2
"""Raised whenever a change to the code changes the bytes the same policy writes."""


@dataclass(frozen=True, slots=True)
class Policy:
    """Which rules run and what is withheld; ``enabled`` false means data leaves raw."""

    enabled: bool = True
    disabled: frozenset[str] = frozenset()
    withhold: frozenset[str] = frozenset()
    home_paths: bool = True
    """Whether the user name in ``/home/<name>/`` and ``/Users/<name>/`` is replaced."""
    key_digest: str = ""
    """A digest of the key the policy is used with (never the key): set by ``with_key``."""

    @classmethod
    def from_settings(cls, section: Mapping[str, object]) -> Policy:
        """The policy a config's ``[redact]`` table (or its dataclass as a mapping) says.

        Raises ValueError naming the key for an unknown key, a wrong type or an unknown
        rule or class, since a typo here would silently push a secret.
        """
        unknown = sorted(set(section) - set(SETTINGS_KEYS))
        if unknown:
            raise ValueError(f"redact: unknown key {unknown[0]!r}")
        enabled = _flag(section, "enabled", True)
        home_paths = _flag(section, "home_paths", True)
        disabled = _names(section, "disable", RULE_NAMES, "rule")
        withhold = _names(section, "withhold", WITHHOLD_CLASSES, "class")
        if "key" in section and not isinstance(section["key"], str):
            raise ValueError("redact.key must be a string")
        return cls(
            enabled=enabled,
            disabled=frozenset(disabled),
            withhold=frozenset(withhold),
            home_paths=home_paths,
        )

    def with_key(self, key: bytes) -> Policy:
        """This policy as used with ``key``: its fingerprint then changes with the key."""
        digest = hashlib.sha256(b"asz-redact-key\0" + key).hexdigest()[:16]
        return Policy(self.enabled, self.disabled, self.withhold, self.home_paths, digest)

    @property
    def rules(self) -> tuple[str, ...]:
        """The rules that run, in the order they are tried."""
        return tuple(
            name
            for name in RULE_NAMES
            if name not in self.disabled and (self.home_paths or name != "user")
        )

    @property
    def identity(self) -> tuple[str, ...]:
        return tuple(name for name in self.rules if name in IDENTITY_RULES)

    @property
    def fingerprint(self) -> str:
        """A stable digest of everything that changes the output: the version of the code's
        rules, the rules that run, what is withheld, and the key's digest."""
        document = {
            "version": POLICY_VERSION,
            "enabled": self.enabled,
            "rules": list(self.rules),
            "withhold": sorted(self.withhold),
            "key": self.key_digest,
        }
        text = json.dumps(document, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:24]


def _flag(section: Mapping[str, object], name: str, default: bool) -> bool:
    value = section.get(name, default)
    if not isinstance(value, bool):
        raise ValueError(f"redact.{name} must be true or false")
    return value


def _names(
    section: Mapping[str, object], name: str, known: tuple[str, ...], what: str
) -> tuple[str, ...]:
    value = section.get(name, ())
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"redact.{name} must be a list of strings")
    for item in value:
        if item not in known:
            raise ValueError(f"redact.{name}: unknown {what} {item!r} (known: {', '.join(known)})")
    return tuple(value)
