"""The redactor a config names: its ``[redact]`` policy, with the key it finds.

Every place where data leaves the machine (a push, the shared web view, an export) makes its
redactor here, so they all redact alike and a marker of one equals the same value's marker in
another.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

from asz.config import Config
from asz.redact.key import redaction_key
from asz.redact.policy import Policy
from asz.redact.redactor import Redactor

__all__ = ["configured_redactor"]


def configured_redactor(config: Config, key_file: Path, *, make: bool = True) -> Redactor:
    """The config's redactor; the key is ``ASZ_REDACT_KEY``, the config's, or the one kept in
    ``key_file`` (made there when absent if ``make``; see ``asz.redact.key``). ValueError, in
    words naming what is wrong, for a policy or a key that cannot be used (the config, a
    leaf module, checks only their types)."""
    policy = Policy.from_settings(asdict(config.redact))
    key, _origin = redaction_key(config.redact.key, os.environ, key_file, make=make)
    return Redactor(policy, key)
