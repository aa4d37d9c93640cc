"""The join keys a provider body carries, read as written and never inferred.

A request names its session (``metadata.user_id`` is a JSON *string* whose content holds
``session_id``), its prompt and the request before it in its chain (``cc_prompt_id`` and
``cc_prev_req`` in the billing block, the text of ``system[0]``). A response names its message
(top-level ``id``) and, through its file name, its provider request id. Everything else about
where a body belongs is decided elsewhere from these keys.

Reading never fails: a body that is not JSON, not an object, or holds invalid UTF-8 yields only
the keys that can be read. Values are kept byte-exact (no case folding, no trimming); a value
that is not a string, is longer than ``MAX_KEY_LENGTH`` or holds whitespace, control characters
or undecodable bytes is dropped, since keys name directories and are matched exactly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields

import orjson

__all__ = [
    "KEY_NAMES",
    "MAX_KEY_LENGTH",
    "SESSION_ID_RE",
    "BodyKeys",
    "is_session_id",
    "is_uuid_stem",
    "keys_of",
    "parse_billing_block",
    "read_keys",
]

MAX_KEY_LENGTH = 256

SESSION_ID_RE = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)
"""Claude Code's session id form; case is kept, so joins stay byte-exact."""

_BILLING_ITEM = re.compile(r"(?<![^\s;:])([A-Za-z0-9_.\-]+)=([^;\s]*)")
# Whitespace, C0/C1 controls, and the surrogates that stand for undecodable bytes.
_UNFIT = re.compile(r"[\s\x00-\x1f\x7f-\x9f\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class BodyKeys:
    """Keys read from one body; ``None`` where the body does not carry one."""

    model: str | None = None
    session: str | None = None
    prompt: str | None = None
    prev_request: str | None = None
    message_id: str | None = None
    request_id: str | None = None

    def as_dict(self) -> dict[str, str]:
        """Only the keys present, as a manifest carries them."""
        return {name: value for name in KEY_NAMES if (value := getattr(self, name))}

    def as_tuple(self) -> tuple[str | None, ...]:
        """Every key in ``KEY_NAMES`` order, ``None`` where absent (a ledger row's columns)."""
        return tuple(getattr(self, name) for name in KEY_NAMES)

    @classmethod
    def from_dict(cls, keys: object) -> BodyKeys:
        """The keys of a manifest's ``keys`` object: names it does not know, and values that
        are not strings, are left out."""
        if not isinstance(keys, dict):
            return cls()
        return cls(
            **{name: value for name in KEY_NAMES if isinstance(value := keys.get(name), str)}
        )


KEY_NAMES: tuple[str, ...] = tuple(field.name for field in fields(BodyKeys))
"""The one list of body key names, in field order: manifests, ledger columns and readers."""


def is_session_id(value: str) -> bool:
    """Whether ``value`` is in Claude Code's session id form (safe to name a directory)."""
    return SESSION_ID_RE.fullmatch(value) is not None


def is_uuid_stem(stem: str) -> bool:
    """Whether a response file's stem is a random UUID, which means it names no request id."""
    return is_session_id(stem)


def parse_billing_block(text: str) -> dict[str, str]:
    """Read ``k=v;`` items from a billing block such as
    ``x-anthropic-billing-header: cc_version=2.1.260; cch=00000; cc_prompt_id=…;``.

    Tolerant by design: the header prefix, missing separators and stray text are skipped, a
    value runs to the next ``;`` or whitespace, and the first spelling of a key wins.
    """
    items: dict[str, str] = {}
    for match in _BILLING_ITEM.finditer(text):
        items.setdefault(match.group(1), match.group(2))
    return items


def read_keys(role: str, stem: str, body: bytes) -> BodyKeys:
    """The keys of a ``role`` body whose file name, less ``.<role>.json``, is ``stem``."""
    return keys_of(role, stem, _load(body))


def keys_of(role: str, stem: str, value: object) -> BodyKeys:
    """The keys of a body already parsed to ``value`` (None when it did not parse), for a
    caller that parsed it anyway and need not have it parsed twice."""
    top = value if isinstance(value, dict) else {}
    model = _fit(top.get("model"))
    if role == "request":
        billing = parse_billing_block(_billing_text(top.get("system")))
        return BodyKeys(
            model=model,
            session=_session(top.get("metadata")),
            prompt=_fit(billing.get("cc_prompt_id")),
            prev_request=_fit(billing.get("cc_prev_req")),
        )
    if role == "response":
        return BodyKeys(
            model=model,
            message_id=_fit(top.get("id")),
            request_id=None if is_uuid_stem(stem) else _fit(stem),
        )
    return BodyKeys(model=model)


def _load(data: bytes | str) -> object:
    """Parse JSON, or return None; invalid UTF-8 survives as surrogates that ``_fit`` drops."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    text = data if isinstance(data, str) else data.decode("utf-8", errors="surrogateescape")
    try:
        return json.loads(text, parse_int=str, parse_float=str, parse_constant=str)
    except (ValueError, RecursionError):
        return None


def _fit(value: object) -> str | None:
    if not isinstance(value, str) or not value or len(value) > MAX_KEY_LENGTH:
        return None
    return None if _UNFIT.search(value) else value


def _billing_text(system: object) -> str:
    if isinstance(system, str):
        return system
    if isinstance(system, list) and system and isinstance(system[0], dict):
        text = system[0].get("text")
        if isinstance(text, str):
            return text
    return ""


def _session(metadata: object) -> str | None:
    if not isinstance(metadata, dict):
        return None
    user_id = metadata.get("user_id")
    if not isinstance(user_id, str):
        return None
    inner = _load(user_id)
    return _fit(inner.get("session_id")) if isinstance(inner, dict) else None
