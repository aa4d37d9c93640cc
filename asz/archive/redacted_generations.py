"""The generations of a redacted root's counterpart (``asz.archive.redacted``).

Generations (``asz.store._generation``) have counterparts too, whose manifests name the
counterparts' sizes and digests, never the landed files':

- a repacked session's generation is *mirrored*: its files' counterparts are made like any
  file's, at the same paths, and once they all are, the root's manifest is written beside
  them with each file's size and SHA-256 replaced by its counterpart's (and ``redacted``
  naming the policy), so the counterpart reads as the session does;
- a session the archive holds under another policy is *re-redacted* (``reredact``): the
  counterparts of every file the session counts now are written again, renumbered 1 to m,
  as a generation of their own replacing the session's numbers up to its highest, which the
  archive then counts in place of what went before. It is a *revision* of those numbers
  (``asz.store.GenerationId``) above any the archive holds, so it goes beside a generation
  of the same numbers there, and never revision 0: that is the root's own generation's,
  whose mirror is made at its name. The counterparts it was made from stay,
  since making the session's later files follows them.
"""

from __future__ import annotations

import hashlib

import orjson

from asz.archive.redacted_files import KEEP_HEADER, Counterpart
from asz.store import (
    MAX_MANIFEST_BYTES,
    REPACK_LEVELS,
    Generation,
    GenerationWriter,
    LandedName,
    parse_generation_dir,
    parse_generation_file,
    redactions_path,
    remove_unpublished,
)

__all__ = ["Mirroring"]


class Mirroring(Counterpart):
    """The part of a redacted root that mirrors the root's generations and re-redacts."""

    def mirror(self, session_id: str) -> None:
        """Writes the counterpart of the session's generation manifest once every file it
        names has its counterpart (see the module); nothing when it has none or it is
        written."""
        generation = self.store.open_session(session_id).generation()
        if generation is None or self.holds(generation.path):
            return
        if not all(self.holds(name.path) for name in generation.files):
            return
        manifest = orjson.loads(self.store.backend.read(generation.path, MAX_MANIFEST_BYTES))
        for item in manifest["files"]:
            data = self.read(item["path"])
            item["size"], item["sha256"] = len(data), hashlib.sha256(data).hexdigest()
        manifest["redacted"] = self.fingerprint
        backend = self.shadow.backend
        temp = backend.write_temp(generation.path, orjson.dumps(manifest) + b"\n")
        try:
            backend.publish([temp], None, lambda _i: None)
        finally:
            backend.remove_temp(temp)

    def reredact(self, session_id: str, replaces: int, *, above: int = 0) -> Generation:
        """Publishes in the counterpart a generation replacing the session's numbers 1 to
        ``replaces``: the counterparts of every file the session counts now, in order, each
        written again with the same records (see the module). They must all be made. Its
        revision is above ``above`` (the archive's highest of those numbers) and above every
        one the counterpart has, and never 0, the revision of the root's own generations,
        whose mirrors stand at their names: a repack of the root at the same number later
        never meets it."""
        # A generation directory without its manifest here is a re-redaction killed half way
        # (a mirror's is complete before its files are all made, which they are by now).
        backend = self.shadow.backend
        remove_unpublished(backend, session_id)
        held = (
            parse_generation_dir(e.name) if e.is_dir else parse_generation_file(e.name)
            for e in backend.list(session_id)
        )
        revisions = [g.revision for g in held if g is not None and g.replaces == replaces]
        session = self.store.open_session(session_id)
        writer = GenerationWriter(
            backend,
            session_id,
            replaces,
            origin=session.origin(),
            compression=self.shadow.compression,
            revision=max(above, *revisions, 0) + 1,
            levels=REPACK_LEVELS,
        )
        for name in session.landed():
            landed = self._of(name)
            header = {
                key: landed.header[key]
                for key in (*KEEP_HEADER, "stream_dir", "redacted")
                if key in landed.header and key != "lost"
            }
            records = [(row.meta, row.payload) for row in landed.records]
            written = writer.land(name.kind, _ordinary_dir(name), header, records)
            said = {**orjson.loads(self.record(name.path)), "path": written.path}
            self.shadow.backend.replace_derived(
                redactions_path(written.path), orjson.dumps(said) + b"\n"
            )
        return writer.publish()


def _ordinary_dir(name: LandedName) -> str:
    """The session's ordinary directory a landed file stands for (a generation's file: its
    directory with the generation's taken out)."""
    parts = name.path.split("/")[:-1]
    if len(parts) > 1 and parse_generation_dir(parts[1]) is not None:
        del parts[1]
    return "/".join(parts)
