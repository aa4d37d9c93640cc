"""The causes ``asz synth`` injects, and what ``asz cache`` says of each."""

from __future__ import annotations

__all__ = ["INJECTED"]

INJECTED = {
    "upgrade": ("upgrade", "Claude Code 2.1.260 -> 2.1.262"),
    "effort": ("effort", 'effort "high" -> "medium"'),
    "model": ("model", " -> claude-opus-"),
    "system": ("system", "system block 2 changed"),
    "fast_mode": ("fast_mode", 'speed "standard" -> "fast"'),
    "tools_added": ("tools", "added mcp__linear__create_issue"),
    "tools_loaded": ("tools", " (was deferred)"),
    "tools_denied": ("tools", "removed mcp__"),
    "ttl": ("ttl", " passed the 1h00m lifetime"),
    "ttl_5m": ("ttl", " passed the 5m00s lifetime"),
}
"""What ``asz cache`` says of each change the synth makes: the cause, and words its detail
holds. The model is switched twice: to one that keeps its cache across an effort change, and
back."""
