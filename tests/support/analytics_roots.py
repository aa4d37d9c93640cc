"""A machine whose root's facts are written as Parquet tables, for the analytics tests: the
real ``asz`` lands synthetic captures, writes the tables and reads them back."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from asz.synth import SynthOptions, synthesize
from support.archive_roots import Machine


@dataclass
class FactsMachine(Machine):
    """A :class:`Machine` with its tables in ``tables/`` unless told otherwise."""

    @property
    def tables(self) -> Path:
        return self.base / "tables"

    def land_more(self, seed: int, start: datetime | None = None, sessions: int = 1) -> None:
        """Another capture (``seed``) landed into the same root by one more real pass."""
        options = SynthOptions(seed=seed, sessions=sessions)
        if start is not None:
            options = SynthOptions(seed=seed, sessions=sessions, start=start)
        claude = self.base / f"claude-{seed}"
        synthesize(claude, options)
        env = {**self.env(), "CLAUDE_CONFIG_DIR": str(claude)}
        done = self.asz_env(env, "collect", "--once", "--root", str(self.root))
        assert done.returncode == 0, done.stderr

    def export(self, *args: str, to: str | None = None, env: dict[str, str] | None = None) -> Any:
        """``asz export parquet --json``'s document; asserts it ran clean."""
        where = to or str(self.tables)
        done = self.asz_env(
            {**self.env(), **(env or {})},
            "export",
            "parquet",
            "--root",
            str(self.root),
            "--to",
            where,
            "--json",
            *args,
        )
        assert done.returncode == 0, done.stderr
        return orjson.loads(done.stdout)

    def sql(self, query: str, *args: str, source: str | None = None) -> Any:
        """``asz sql --json``'s rows."""
        done = self.asz("sql", query, "--from", source or str(self.tables), "--json", *args)
        assert done.returncode == 0, done.stderr
        return orjson.loads(done.stdout)

    def cache(self, *args: str, config: Path | None = None) -> Any:
        """``asz cache --json`` over every session, from the tables when ``config`` names
        them."""
        options = ["--config", str(config)] if config else ["--config", str(self.no_config())]
        done = self.asz("cache", "--root", str(self.root), "--json", *options, *args)
        assert done.returncode == 0, done.stderr
        return orjson.loads(done.stdout)

    def tables_config(self, url: str | None = None, extra: str = "") -> Path:
        path = self.base / "tables.toml"
        path.write_text(f'{extra}[analytics]\nurl = "{url or self.tables}"\n')
        return path

    def no_config(self) -> Path:
        path = self.base / "plain.toml"
        path.write_text("")
        return path


def parts(directory: Path) -> list[str]:
    """Every file under ``directory``, relative to it, sorted."""
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())
