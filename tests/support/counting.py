"""A storage backend that counts its reads, to show what a reader did not read again."""

from __future__ import annotations

from asz.store import BODY_KIND, LocalBackend

__all__ = ["counting"]


def counting(base: type[LocalBackend]) -> type[LocalBackend]:
    """``base`` counting the reads of landed body files (``body_reads``)."""

    class Counting(base):  # type: ignore[valid-type,misc]
        body_reads = 0

        def read(self, path: str, limit: int) -> bytes:
            if f"/{BODY_KIND}/" in path:
                self.body_reads += 1
            return super().read(path, limit)

    return Counting
