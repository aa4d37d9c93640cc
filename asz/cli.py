"""The ``asz`` console script's entry point; the commands themselves are in :mod:`asz.commands`."""

from __future__ import annotations

from asz.commands import build_parser, command_names, main

__all__ = ["build_parser", "command_names", "main"]
