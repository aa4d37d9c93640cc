"""asz keeps Claude Code's provider bodies and transcripts, deduplicated and verifiable."""

__all__ = ["__version__"]

__version__ = "0.1.0"
