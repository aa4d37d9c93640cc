"""The names Claude Code gives a subagent's files, in one place for the collector and the
status line (which loads nothing else of the adapters).

``agent-<id>.jsonl`` is a subagent's transcript and ``agent-<id>.meta.json`` its sidecar;
``<id>`` is the agent id, the stream the transcript lands as.
"""

import re

__all__ = ["AGENT_SIDECAR", "AGENT_TRANSCRIPT"]

AGENT_TRANSCRIPT = re.compile(r"^agent-([A-Za-z0-9][A-Za-z0-9_-]*)\.jsonl$")
AGENT_SIDECAR = re.compile(r"^agent-([A-Za-z0-9][A-Za-z0-9_-]*)\.meta\.json$")
