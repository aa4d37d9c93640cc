"""asz keeps Claude Code's provider bodies and transcripts, deduplicated and verifiable."""

__version__ = "0.1.0"
