"""``asz synth``: writes a Claude Code capture (provider bodies and transcripts) together with
its ground truth, for tests and benchmarks of every other part of asz."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from asz.synth import expected
from asz.synth.generate import generate
from asz.synth.options import CLAUDE_VERSION, SynthOptions
from asz.synth.replay import NoTranscripts, replay
from asz.synth.writer import Capture

__all__ = ["CLAUDE_VERSION", "NoTranscripts", "SynthOptions", "synthesize"]

EXPECTED_FILE = "expected.json"


def synthesize(outdir: Path, options: SynthOptions) -> dict[str, Any]:
    """Writes the capture under outdir and returns the expected.json document; NoTranscripts,
    with nothing written, when ``options.from_transcripts`` holds no transcript."""
    capture = Capture(Path(outdir))
    if options.from_transcripts is not None:
        sessions = replay(options, capture)
    else:
        sessions = generate(options, capture)
    document = expected.build(options, sessions, capture)
    data = orjson.dumps(document, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"
    capture.put(EXPECTED_FILE, data, capture.last_mtime)
    capture.write()
    return document
