"""Redaction: nothing leaves the machine raw (the archive, the shared web view, exports).

The local root stays exact; a ``Redactor`` rewrites a body or transcript line on its way out,
replacing each secret and piece of identity the ``Policy`` names by a marker that names its
rule and carries a keyed hash of the value (``«redacted:aws-access-key:3f9a12c4e0b1»``), so
equal values give equal markers and a redacted body still compares with the one before it.
This package imports leaf modules and third-party libraries only.
"""

from __future__ import annotations

from asz.redact.configured import configured_redactor
from asz.redact.key import KEY_ENV, redaction_key
from asz.redact.policy import WITHHOLD_CLASSES, Policy
from asz.redact.redactor import Finding, Hit, Redacted, Redactor, ScannerFailed
from asz.redact.rules import IDENTITY_RULES, RULE_NAMES, RULES
from asz.redact.tally import SessionLike, Tally, tally_documents, tally_session

__all__ = [
    "IDENTITY_RULES",
    "KEY_ENV",
    "RULES",
    "RULE_NAMES",
    "WITHHOLD_CLASSES",
    "Finding",
    "Hit",
    "Policy",
    "Redacted",
    "Redactor",
    "ScannerFailed",
    "SessionLike",
    "Tally",
    "configured_redactor",
    "redaction_key",
    "tally_documents",
    "tally_session",
]
