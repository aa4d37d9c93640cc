"""The model Claude Code names on a message it wrote itself and never sent to a model.

Such a message (an error shown in the conversation, an interrupted turn) is a transcript line
with an assistant's shape but no call behind it: the facts, the view, the cache report and the
status line all leave it out of the calls, so all of them must know the one name. It lives
here, below every layer, so that the status line reads it without loading the store.
"""

from __future__ import annotations

__all__ = ["SYNTHETIC_MODEL"]

SYNTHETIC_MODEL = "<synthetic>"
