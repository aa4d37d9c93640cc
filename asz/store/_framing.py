"""The landed-file format: a header, one record per line-plus-payload, a closing line.

A landed file (before compression) is::

    {"format":"asz.landed/1","kind":...,"session":...,"seq":N,...}\\n      header line
    {"r":1,"n":LEN,"m":{...meta...}}\\n<LEN payload bytes>\\n                one per record
    {"end":"asz.landed/1","records":N,"sha256":"<hex>"}\\n                  closing line

The closing digest covers every byte before the closing line, so a reader can tell a file is
whole without trusting anything inside it. Payloads are raw bytes, never escaped, which keeps
the exact bytes of what was landed and lets a reader slice them without a tokenizer. The whole
file is one zstd frame (with its own checksum) unless compression is ``none``; readers tell the
two apart by the zstd magic number.

Every landed file is untrusted input to the reader: sizes are checked against what is actually
there before anything is allocated, and every problem is a :class:`LandedFileError` naming the
file and the row.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import zstandard

from asz import __version__
from asz.gc_pause import gc_paused

__all__ = [
    "FORMAT",
    "MAX_CONTENT_BYTES",
    "MAX_LINE_BYTES",
    "WRITER",
    "ZSTD_LEVEL",
    "ZSTD_MAGIC",
    "Framed",
    "LandedFile",
    "LandedFileError",
    "LandedRecord",
    "content_of_own",
    "decode_file",
    "encode_file",
    "frame",
]

FORMAT = "asz.landed/1"
WRITER = f"asz/{__version__}"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ZSTD_LEVEL = 6
MAX_CONTENT_BYTES = 1 << 30
MAX_LINE_BYTES = 64 * 1024 * 1024
_FEED_BYTES = 1024
_END_PREFIX = b'{"end":'


class LandedFileError(Exception):
    """A landed file that does not hold; says which file, which row and why."""

    def __init__(self, path: Path | str, why: str, row: int | None = None) -> None:
        self.path = str(path)
        self.row = row
        self.why = why
        where = f"{self.path}: row {row}" if row is not None else self.path
        super().__init__(f"{where}: {why}")


@dataclass(frozen=True, slots=True)
class LandedRecord:
    """One record of a landed file as read: its row (from 1), its meta, its exact payload."""

    row: int
    meta: dict[str, Any]
    payload: bytes


@dataclass(frozen=True, slots=True)
class LandedFile:
    """A landed file that read whole (closing digest and record count checked): its header,
    which names its kind, session and sequence number, and its records in order."""

    path: str
    """Where the file was read from, as its reader names it (a path, an object's key)."""
    header: dict[str, Any]
    records: list[LandedRecord]

    @property
    def seq(self) -> int:
        return int(self.header["seq"])


@dataclass(frozen=True, slots=True)
class Framed:
    """A landed file as framed for writing: its whole header (format and stamp added), its
    content before compression, and the bytes to write."""

    header: dict[str, Any]
    content: bytes
    data: bytes


def frame(
    header: dict[str, Any],
    records: Iterable[tuple[dict[str, Any], bytes]],
    compression: str,
    level: int = ZSTD_LEVEL,
    stamp: dict[str, Any] | None = None,
) -> Framed:
    """A landed file holding ``records`` in order.

    The header gets the format, the time of writing and the writer's version added, so every
    kind of landed file says when and by what it was written. ``level`` is the zstd level: a
    kind of file landed in bulk may trade a little size for a lot of time. ``stamp`` gives
    the time and writer instead, for a file that stands for one landed before (the redacted
    counterpart of a landed file carries its stamp, so that making it again gives the same
    bytes).
    """
    if stamp is None:
        stamp = {"at": datetime.now(UTC).isoformat(timespec="microseconds"), "writer": WRITER}
    full = {"format": FORMAT, **header, **stamp}
    parts = [orjson.dumps(full), b"\n"]
    count = 0
    for count, (meta, payload) in enumerate(records, start=1):
        parts.append(orjson.dumps({"r": count, "n": len(payload), "m": meta}))
        parts.append(b"\n")
        parts.append(payload)
        parts.append(b"\n")
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    closing = {"end": FORMAT, "records": count, "sha256": digest.hexdigest()}
    parts.append(orjson.dumps(closing) + b"\n")
    content = b"".join(parts)
    data = content if compression == "none" else _compressor(level).compress(content)
    return Framed(full, content, data)


def encode_file(
    header: dict[str, Any],
    records: Iterable[tuple[dict[str, Any], bytes]],
    compression: str,
    level: int = ZSTD_LEVEL,
) -> bytes:
    """The exact bytes of a landed file holding ``records`` in order (see :func:`frame`)."""
    return frame(header, records, compression, level).data


def content_of_own(data: bytes) -> bytes:
    """The content of a file this process framed, in one call: its frame declares its size,
    so, unlike a file read from a root (:func:`decode_file`), it needs no cap."""
    if not data.startswith(ZSTD_MAGIC):
        return data
    decompressor: zstandard.ZstdDecompressor | None = getattr(_compressors, "decompressor", None)
    if decompressor is None:
        decompressor = _compressors.decompressor = zstandard.ZstdDecompressor()
    return decompressor.decompress(data)


_compressors = threading.local()


def _compressor(level: int) -> zstandard.ZstdCompressor:
    """This thread's compressor for ``level``: one is not safe to share between threads, and
    setting one up costs more than compressing a small file (likewise the decompressor that
    reads back what this thread wrote). Only landing's levels (up to ``ZSTD_LEVEL``) are
    kept: a compressor holds its working memory for as long as it lives (about 40 MiB at
    level 12, 90 MiB at 19), and the higher levels compress a few large files of a repack,
    for which setting one up costs nothing next to the compressing."""
    if level > ZSTD_LEVEL:
        return zstandard.ZstdCompressor(level=level, write_checksum=True)
    cache: dict[int, zstandard.ZstdCompressor] | None = getattr(_compressors, "by_level", None)
    if cache is None:
        cache = _compressors.by_level = {}
    compressor = cache.get(level)
    if compressor is None:
        compressor = cache[level] = zstandard.ZstdCompressor(level=level, write_checksum=True)
    return compressor


def decode_file(path: Path | str, data: bytes, max_bytes: int = MAX_CONTENT_BYTES) -> LandedFile:
    """Checks and splits the bytes of a landed file (compressed or not); ``path`` names it in
    errors."""
    path = str(path)
    content = _decompress(path, data, max_bytes) if data.startswith(ZSTD_MAGIC) else data
    return _parse(path, content)


def _decompress(path: str, data: bytes, max_bytes: int) -> bytes:
    # A frame that declares its size within the cap is fed whole: the decoder refuses to
    # write past the size a frame declares. Any other is fed in small slices, so that no
    # single step can expand past the cap by much: one zstd block turns a few bytes into at
    # most 128 KiB.
    chunks: list[bytes] = []
    total = 0
    try:
        declared = zstandard.frame_content_size(data)
        feed = len(data) if 0 <= declared <= max_bytes else _FEED_BYTES
        decompressor = zstandard.ZstdDecompressor().decompressobj()
        view = memoryview(data)
        for start in range(0, len(view), feed):
            if decompressor.eof:
                raise LandedFileError(path, "has bytes after its compressed frame")
            chunk = decompressor.decompress(view[start : start + feed])
            total += len(chunk)
            if total > max_bytes:
                raise LandedFileError(path, f"decompresses past {max_bytes} bytes")
            chunks.append(chunk)
    except zstandard.ZstdError as err:
        raise LandedFileError(path, f"does not decompress: {err}") from None
    if not decompressor.eof or decompressor.unused_data:
        raise LandedFileError(path, "ends inside its compressed frame (the file is not whole)")
    return b"".join(chunks)


def _json_line(path: str, content: bytes, start: int, row: int | None) -> tuple[Any, int]:
    end = content.find(b"\n", start, start + MAX_LINE_BYTES)
    if end < 0:
        raise LandedFileError(path, "ends inside a line (the file is not whole)", row)
    try:
        value = orjson.loads(content[start:end])
    except orjson.JSONDecodeError:
        raise LandedFileError(path, "holds a line that is not JSON", row) from None
    if not isinstance(value, dict):
        raise LandedFileError(path, "holds a line that is not a JSON object", row)
    return value, end + 1


def _parse(path: str, content: bytes) -> LandedFile:
    # A body file's record lines hold many thousands of small lists that live as long as the
    # file: the cycle collector would walk them again and again while they are made.
    with gc_paused():
        return _parse_lines(path, content)


def _parse_lines(path: str, content: bytes) -> LandedFile:
    header, pos = _json_line(path, content, 0, None)
    if header.get("format") != FORMAT:
        raise LandedFileError(path, f"is not an {FORMAT} file")
    if not isinstance(header.get("seq"), int) or not isinstance(header.get("kind"), str):
        raise LandedFileError(path, "has a header without seq or kind")
    records: list[LandedRecord] = []
    while True:
        row = len(records) + 1
        if content.startswith(_END_PREFIX, pos):
            _check_closing(path, content, pos, len(records))
            return LandedFile(path=path, header=header, records=records)
        line, pos = _json_line(path, content, pos, row)
        length, meta = line.get("n"), line.get("m")
        if line.get("r") != row or not isinstance(meta, dict):
            raise LandedFileError(path, "has a record line out of order or without meta", row)
        if not isinstance(length, int) or length < 0 or pos + length + 1 > len(content):
            raise LandedFileError(path, "claims a payload longer than the file", row)
        if content[pos + length : pos + length + 1] != b"\n":
            raise LandedFileError(path, "has a payload that does not end where it claims", row)
        records.append(LandedRecord(row=row, meta=meta, payload=content[pos : pos + length]))
        pos += length + 1


def _check_closing(path: str, content: bytes, pos: int, count: int) -> None:
    closing, end = _json_line(path, content, pos, None)
    if end != len(content):
        raise LandedFileError(path, "has bytes after its closing line")
    if closing.get("end") != FORMAT or closing.get("records") != count:
        raise LandedFileError(path, f"closing line does not count its {count} records")
    if closing.get("sha256") != hashlib.sha256(content[:pos]).hexdigest():
        raise LandedFileError(path, "does not match its closing digest")
