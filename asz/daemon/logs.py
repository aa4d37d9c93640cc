"""The service's log: one JSON object per line on stdout, for journald and log shippers.

Every line carries ``event``, ``level`` and ``timestamp``. What else a line carries is counts,
paths, reasons and error messages, never a body's content: a body holds the user's prompts,
e-mail address and account ids, and logs travel further than the storage root does.
"""

from __future__ import annotations

import logging
import sys
from typing import BinaryIO

import orjson
import structlog
from structlog.typing import FilteringBoundLogger


def configure_logging(stream: BinaryIO | None = None) -> FilteringBoundLogger:
    """Sends structlog's lines to ``stream`` (stdout by default), flushed line by line.

    Flushing every line keeps the log in step with what the service does when stdout is a
    pipe to journald or a file, where Python would otherwise hold lines back in a buffer.
    """
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(serializer=orjson.dumps, default=str),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        logger_factory=structlog.BytesLoggerFactory(file=stream or sys.stdout.buffer),
        cache_logger_on_first_use=False,
    )
    return structlog.get_logger()
