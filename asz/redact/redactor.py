"""The redactor: every JSON string of a document scanned, and rewritten in place if it holds
something the policy redacts.

Redaction acts on strings only, on the raw bytes: bytes outside a changed string stay
identical, and the output is JSON of the same structure. Each string's verdict is kept,
keyed by its raw token (or a digest of a long one), so a tool result that 200 later requests
resend is scanned once: the cost follows unique bytes, not bytes written. Nested JSON inside
a string is text to the rules.
"""

from __future__ import annotations

import collections
import hashlib
import hmac
import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from asz.redact.paths import STRING, PathPart, decode, format_path, string_paths
from asz.redact.policy import Policy
from asz.redact.rules import INSTRUCTIONS_RULE, RULES, Rule

__all__ = ["Finding", "Hit", "Redacted", "Redactor", "ScannerFailed"]

HASH_CHARS = 12
MEMO_BYTES = 64 * 1024 * 1024
"""What the kept verdicts may hold at most; past it they are let go, all at once."""
MIN_TOKEN = 8
"""A string token (quotes included) shorter than this holds no value any rule finds."""
CONTEXT_CHARS = 24
MARKER_OPEN = "«"
KEPT_KEYS = frozenset({"type", "name", "id", "tool_use_id", "media_type"})
"""Inside a withheld part, the strings under these keys stay: they are its shape."""


class ScannerFailed(Exception):
    """A scan that could not finish; a caller must then send nothing of the document."""


@dataclass(frozen=True, slots=True)
class Hit:
    """One marker made: its rule and the JSON path of the string it is in."""

    rule: str
    path: str


@dataclass(frozen=True, slots=True)
class Redacted:
    """A document's redacted bytes and the markers in it, in document order."""

    data: bytes
    hits: tuple[Hit, ...]
    json_object: bool = False
    """The document parsed as a JSON object, so its redaction is one too (only strings
    change): a caller that cuts it (``SessionBodies.take``) need not parse it again."""


@dataclass(frozen=True, slots=True)
class Finding:
    """A hit shown to the user: its rule, path, and the text around it with every found value
    replaced by its marker (never the value)."""

    rule: str
    path: str
    context: str


_Span = tuple[int, int, str]
_UNSEEN: Any = object()
_Change = tuple[int, int, bytes, tuple[str, ...], tuple[tuple["PathPart", ...], bool], str]
"""A string token's start and end in its piece, its replacement, the rules that fired, its
path in the piece (and whether it is a key), and its text."""
_SYSTEM_BLOCK = b'{"type":"text"'
_Found = tuple[int, int, tuple[str, ...], tuple[tuple["PathPart", ...], bool], str]
"""A change in a document: its piece's number, its start, rules, path in the piece, text."""
_Verdict = tuple[bytes, tuple[str, ...]] | None


class Redactor:
    """Redacts documents under one policy and key; one per run, so its memo spans the run."""

    def __init__(self, policy: Policy, key: bytes) -> None:
        self.policy = policy.with_key(key)
        self._key = key
        self._rules: tuple[Rule, ...] = tuple(RULES[name] for name in self.policy.rules)
        if "instructions" in policy.withhold:
            self._rules = (INSTRUCTIONS_RULE, *self._rules)
        self._fold = any(rule.fold for rule in self._rules)
        self._memo: dict[bytes, _Verdict] = {}
        self._pieces: dict[bytes, tuple[_Change, ...]] = {}
        self._memo_bytes = 0
        self.counts: collections.Counter[str] = collections.Counter()
        self._structural = bool(set(policy.withhold) - {"instructions"})

    # --- the public calls --------------------------------------------------------------

    def body(self, raw: bytes) -> Redacted:
        """One provider body (JSON bytes), redacted."""
        return self._document(raw, cut=True)

    def line(self, raw: bytes) -> Redacted:
        """One transcript line (without its newline), or any JSON line, redacted."""
        return self._document(raw, cut=False)

    def text(self, value: str) -> str:
        """Free text (a cause's detail, an exported string), redacted."""
        if not self.policy.enabled:
            return value
        spans = self._scan(value)
        if spans:
            self.counts.update(rule for _, _, rule in spans)
        return self._replace(value, spans)

    def findings(self, raw: bytes) -> list[Finding]:
        """Each hit of a document with a little masked context, for ``asz redact --show``
        (withheld parts are not shown: they are whole strings, not finds)."""
        found: list[Finding] = []
        if not self.policy.enabled:
            return found
        try:
            orjson.loads(raw)
            strings = [(path, STRING.match(raw, at)) for at, path, _ in string_paths(raw)]
            texts = [
                (path, decode(m.group()))
                for path, m in strings
                if m and len(m.group()) >= MIN_TOKEN
            ]
        except (orjson.JSONDecodeError, ValueError):
            texts = [((), raw.decode("utf-8", "surrogateescape"))]
        for path, text in texts:
            spans = self._scan(text)
            if not spans and path and path[-1] == "user_id" and len(text) == 64:
                token = orjson.dumps(text)
                if self._bare_user_id(b'"user_id":' + token, 10, token) is not None:
                    spans = [(0, len(text), "device-id")]
            if not spans:
                continue
            shown = self._replace(text, spans)
            where = format_path(path)
            cursor = 0
            for _, _, rule in spans:
                at = shown.index(MARKER_OPEN, cursor)
                close = shown.index("»", at) + 1
                cursor = close
                left = shown[max(0, at - CONTEXT_CHARS) : at]
                right = shown[close : close + CONTEXT_CHARS]
                context = f"{left}{shown[at:close]}{right}".replace("\n", "⏎")
                found.append(Finding(rule, where, context))
        return found

    # --- documents ---------------------------------------------------------------------

    def _document(self, raw: bytes, *, cut: bool) -> Redacted:
        if not self.policy.enabled:
            return Redacted(raw, ())
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return self._as_text(raw)
        try:
            if self._structural:
                redacted = self._withholding(raw, parsed)
            else:
                redacted = self._strings(raw, parsed, cut)
        except (ValueError, UnicodeError, RecursionError) as err:
            raise ScannerFailed(f"the scan stopped: {type(err).__name__}") from None
        if isinstance(parsed, dict):
            return Redacted(redacted.data, redacted.hits, json_object=True)
        return redacted

    def _strings(self, raw: bytes, parsed: object, cut: bool) -> Redacted:
        """Each piece of the document through the kept verdicts (a body is cut into pieces,
        a line is one); each change's path is its piece's place and its path in the piece."""
        bounds = _bounds(raw) if cut else [0, len(raw)]
        pieces: list[bytes] = []
        found: list[_Found] = []
        done = 0
        for number, (start, end) in enumerate(itertools.pairwise(bounds)):
            if start == end:
                continue
            for first, last, replacement, rules, inner, text in self._piece(raw[start:end]):
                pieces.append(raw[done : start + first])
                pieces.append(replacement)
                done = start + last
                found.append((number, start + first, rules, inner, text))
        if not found:
            return Redacted(raw, ())
        pieces.append(raw[done:])
        located = _placed(parsed, raw, bounds, found)
        if located is None:  # not the shape the cuts assume: walk the whole document
            wanted = {at for _, at, _, _, _ in found}
            walked = {at: (path, key) for at, path, key in string_paths(raw, wanted=wanted)}
            located = [walked[at] for _, at, _, _, _ in found]
        hits: list[Hit] = []
        for (path, is_key), (_, _, rules, _, _) in zip(located, found, strict=True):
            where = format_path(path) + ("(key)" if is_key else "")
            hits.extend(Hit(rule, where) for rule in rules)
        self.counts.update(hit.rule for hit in hits)
        return Redacted(b"".join(pieces), tuple(hits))

    def _piece(self, piece: bytes) -> tuple[_Change, ...]:
        """The changes in one piece (a message, the system prompt, the tools, ...), kept by
        its digest: a request resends every earlier message, and is scanned for its new
        ones alone. A piece that changes is walked once for its changes' paths in it."""
        memo_key = piece if len(piece) <= 256 else hashlib.blake2b(piece, digest_size=16).digest()
        found = self._pieces.get(memo_key)
        if found is not None:
            return found
        changes: list[tuple[int, int, bytes, tuple[str, ...]]] = []
        memo = self._memo
        for match in STRING.finditer(piece):
            token = match.group()
            if len(token) < MIN_TOKEN:
                continue
            verdict = memo.get(token, _UNSEEN) if len(token) <= 256 else _UNSEEN
            if verdict is _UNSEEN:
                verdict = self._verdict(token)
            if verdict is None and len(token) == 66:
                verdict = self._bare_user_id(piece, match.start(), token)
            if verdict is not None:
                changes.append((match.start(), match.end(), verdict[0], verdict[1]))
        result: tuple[_Change, ...] = ()
        if changes:
            walk = string_paths(
                piece, in_object=piece[:1] == b'"', wanted={change[0] for change in changes}
            )
            inner = {start: (path, is_key) for start, path, is_key in walk}
            result = tuple(
                (*change, inner.get(change[0], ((), False)), decode(piece[change[0] : change[1]]))
                for change in changes
            )
        size = 64 + sum(len(c[2]) + len(c[5]) + 64 for c in result)
        self._remember(self._pieces, memo_key, result, size)
        return result

    def _withholding(self, raw: bytes, parsed: object) -> Redacted:
        """The slow walk, taken only when a class is withheld: every string's path decides."""
        results = _tool_results(parsed) if "tool-results" in self.policy.withhold else set()
        pieces: list[bytes] = []
        hits: list[Hit] = []
        done = 0
        for start, path, is_key in string_paths(raw):
            match = STRING.match(raw, start)
            assert match is not None
            token = match.group()
            withheld = None if is_key else self._withheld_class(path, results)
            if withheld is not None:
                text = decode(token)
                marker = self._withheld_marker(withheld, text)
                replacement: bytes | None = orjson.dumps(marker)
                rules: tuple[str, ...] = (f"withheld-{withheld}",)
            else:
                verdict = self._verdict(token) if len(token) >= MIN_TOKEN else None
                if verdict is None and len(token) == 66:
                    verdict = self._bare_user_id(raw, start, token)
                replacement, rules = verdict if verdict is not None else (None, ())
            if replacement is None:
                continue
            pieces.append(raw[done:start])
            pieces.append(replacement)
            done = match.end()
            where = format_path(path)
            hits.extend(Hit(rule, where) for rule in rules)
        if not hits:
            return Redacted(raw, ())
        pieces.append(raw[done:])
        self.counts.update(hit.rule for hit in hits)
        return Redacted(b"".join(pieces), tuple(hits))

    def _withheld_class(
        self, path: tuple[PathPart, ...], results: set[tuple[PathPart, ...]]
    ) -> str | None:
        if path and path[-1] in KEPT_KEYS:
            return None
        top = path[0] if path else None
        withhold = self.policy.withhold
        if top == "system" and "system" in withhold:
            return "system"
        if top == "tools" and "tools" in withhold:
            return "tools"
        if results and any(path[: len(prefix)] == prefix for prefix in results):
            return "tool-results"
        return None

    def _as_text(self, raw: bytes) -> Redacted:
        """A document that is not JSON is text: redacted all the same, never passed raw."""
        text = raw.decode("utf-8", "surrogateescape")
        spans = self._scan(text)
        if not spans:
            return Redacted(raw, ())
        self.counts.update(rule for _, _, rule in spans)
        data = self._replace(text, spans).encode("utf-8", "surrogateescape")
        return Redacted(data, tuple(Hit(rule, "$") for _, _, rule in spans))

    # --- strings -----------------------------------------------------------------------

    def _verdict(self, token: bytes) -> _Verdict:
        memo_key = token if len(token) <= 256 else hashlib.blake2b(token, digest_size=16).digest()
        try:
            return self._memo[memo_key]
        except KeyError:
            pass
        text = decode(token)
        spans = self._scan(text)
        verdict: _Verdict = None
        if spans:
            verdict = (_encode(token, self._replace(text, spans)), tuple(r for _, _, r in spans))
        self._remember(self._memo, memo_key, verdict, 64 + (len(verdict[0]) if verdict else 0))
        return verdict

    def _remember(self, memo: dict[bytes, Any], key: bytes, value: object, size: int) -> None:
        """Keeps a verdict within the bound on what all of them hold; past it, every kept
        verdict is let go at once (cheaper than tracking which was used last)."""
        cost = len(key) + size
        if self._memo_bytes + cost > MEMO_BYTES:
            self._memo.clear()
            self._pieces.clear()
            self._memo_bytes = 0
        memo[key] = value
        self._memo_bytes += cost

    def _bare_user_id(self, raw: bytes, start: int, token: bytes) -> _Verdict:
        """The 1.0.6 form of ``metadata.user_id``: a bare 64-hex device hash, told from any
        other digest by its key alone."""
        if (
            "device-id" not in self.policy.rules
            or raw.rfind(b'"user_id"', max(0, start - 16), start) < 0
        ):
            return None
        text = decode(token)
        if not all(char in "0123456789abcdef" for char in text):
            return None
        return orjson.dumps(self._marker("device-id", text)), ("device-id",)

    def _scan(self, text: str) -> list[_Span]:
        lowered = text.lower() if self._fold else text
        spans: list[_Span] = []
        for rule in self._rules:
            subject = lowered if rule.fold else text
            for anchor in rule.anchors:
                if anchor in subject:
                    spans.extend((start, end, rule.name) for start, end in rule.find(text))
                    break
        if not spans:
            return spans
        if len(spans) == 1:
            return [] if MARKER_OPEN in text and _in_marker(text, spans[0]) else spans
        # Where two overlap, the rule tried first wins (secrets before identity: a database
        # URL's "password@host" is not an email), then the longer.
        order = {name: place for place, name in enumerate(rule.name for rule in self._rules)}
        spans.sort(key=lambda span: (order[span[2]], span[0] - span[1], span[0]))
        kept: list[_Span] = []
        for span in spans:
            if any(span[0] < end and start < span[1] for start, end, _ in kept):
                continue
            if MARKER_OPEN in text and _in_marker(text, span):
                continue
            kept.append(span)
        kept.sort()
        return kept

    def _replace(self, text: str, spans: Iterable[_Span]) -> str:
        out: list[str] = []
        done = 0
        for start, end, rule in spans:
            out.append(text[done:start])
            value = text[start:end]
            if rule == INSTRUCTIONS_RULE.name:
                out.append(self._withheld_marker("instructions", value))
            else:
                out.append(self._marker(rule, value))
            done = end
        out.append(text[done:])
        return "".join(out)

    def _digest(self, value: str) -> str:
        data = value.encode("utf-8", "surrogatepass")
        return hmac.new(self._key, data, hashlib.sha256).hexdigest()[:HASH_CHARS]

    def _marker(self, rule: str, value: str) -> str:
        return f"«redacted:{rule}:{self._digest(value)}»"

    def _withheld_marker(self, what: str, value: str) -> str:
        size = len(value.encode("utf-8", "surrogatepass"))
        return f"«withheld:{what}:{self._digest(value)}:{size} bytes»"


def _in_marker(text: str, span: _Span) -> bool:
    """Whether a found span lies in a marker already there (a redacted text redacted again)."""
    opened = text.rfind(MARKER_OPEN, 0, span[1])
    return opened >= 0 and text.find("»", opened) >= span[0]


def _encode(token: bytes, text: str) -> bytes:
    """The string token for ``text``: written as the source was where it had no escapes (so
    the bytes around a marker stay), else through the JSON encoder."""
    if b"\\" not in token:
        return b'"' + text.encode("utf-8", "surrogateescape") + b'"'
    try:
        return orjson.dumps(text)
    except orjson.JSONEncodeError:
        return json.dumps(text).encode()


def _bounds(raw: bytes) -> list[int]:
    """Where a body is cut: before each message (``{"role":``), before the keys of the
    parts every request of a session repeats (the first ``"system":`` and ``"tools":``, the
    last ``"metadata":``, where Claude Code writes them), and before each block of the system
    prompt, whose first block (the billing header) changes at every request while the others
    stay. An unescaped quote is never inside a string, so each cut is a token boundary and
    scanning strings from one is in step with the document, wherever in it the cut falls."""
    cuts = [0]
    at = raw.find(b'{"role":')
    while at >= 0:
        cuts.append(at)
        at = raw.find(b'{"role":', at + 1)
    system = raw.find(b'"system":[')
    for key, last in ((b'"system":', False), (b'"tools":', False), (b'"metadata":', True)):
        at = raw.rfind(key) if last else raw.find(key)
        if at > 0:
            cuts.append(at)
    if system > 0:
        ends = [cut for cut in cuts if cut > system]
        end = min(ends) if ends else len(raw)
        at = raw.find(_SYSTEM_BLOCK, system, end)
        while at >= 0:
            cuts.append(at)
            at = raw.find(_SYSTEM_BLOCK, at + 1, end)
    cuts.sort()
    cuts.append(len(raw))
    return cuts


def _placed(
    parsed: object, raw: bytes, bounds: list[int], found: list[_Found]
) -> list[tuple[tuple[PathPart, ...], bool]] | None:
    """Each change's path in the document, from its piece's place (the role pieces are the
    messages in order, the key pieces top-level keys) and its path in the piece; None when
    the body is not of the shape the cuts assume, which each path is checked against (the
    parsed document must hold the change's text there)."""
    messages = parsed.get("messages") if isinstance(parsed, dict) else None
    places: list[tuple[PathPart, ...]] = []
    index = block = 0
    for start in bounds[:-1]:
        if start and raw.startswith(b'{"role":', start):
            places.append(("messages", index))
            index += 1
        elif start and raw.startswith(_SYSTEM_BLOCK, start):
            places.append(("system", block))
            block += 1
        else:
            places.append(())
    if index != (len(messages) if isinstance(messages, list) else 0):
        return None
    located = []
    for number, _, _, (inner, is_key), text in found:
        path = places[number] + inner
        if not _holds(parsed, path, is_key, text):
            return None
        located.append((path, is_key))
    return located


def _holds(parsed: object, path: tuple[PathPart, ...], is_key: bool, text: str) -> bool:
    """Whether the parsed document has ``text`` at ``path`` (as the last key, for a key)."""
    node = parsed
    for part in path[:-1] if is_key else path:
        if isinstance(node, dict) and isinstance(part, str) and part in node:
            node = node[part]
            continue
        if not (isinstance(node, list) and isinstance(part, int) and part < len(node)):
            return False
        node = node[part]
    if is_key:
        return isinstance(node, dict) and bool(path) and path[-1] == text and text in node
    return node == text


def _tool_results(parsed: object) -> set[tuple[PathPart, ...]]:
    """The paths of every tool result's content, and of a transcript line's toolUseResult."""
    found: set[tuple[PathPart, ...]] = set()
    stack: list[tuple[tuple[PathPart, ...], object]] = [((), parsed)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == "tool_result" and "content" in node:
                found.add((*path, "content"))
            if not path and "toolUseResult" in node:
                found.add(("toolUseResult",))
            stack.extend(((*path, key), value) for key, value in node.items())
        elif isinstance(node, list):
            stack.extend(((*path, index), value) for index, value in enumerate(node))
    return found
