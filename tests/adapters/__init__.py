"""Landing: Claude Code directories, provider bodies, claims, the ledger, the synthetic
capture."""
