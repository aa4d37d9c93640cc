"""The log: one JSON object per line for journald and log shippers, or lines a person reads.

``--log-format auto`` (the default) picks by where the log goes: a terminal gets structlog's
console lines, anything else (a pipe, a file, journald) JSON. Every JSON line carries
``event``, ``level`` and ``timestamp``; an event meant for people also carries ``message``, a
sentence, and the console shows that sentence alone instead of the event's keys.

What a line carries is counts, paths, reasons and error messages, never a body's content: a
body holds the user's prompts, e-mail address and account ids, and logs travel further than
the storage root does. That is also why a console traceback never shows local variables.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import orjson
import structlog
from structlog.typing import EventDict, FilteringBoundLogger, Processor, WrappedLogger

from asz.output import LOG_FORMATS

__all__ = ["MESSAGE", "configure_logging", "log_to_stderr"]

MESSAGE = "message"
"""The key of an event's sentence for people."""


def configure_logging(
    stream: TextIO | None = None, log_format: str = "auto"
) -> FilteringBoundLogger:
    """Sends structlog's lines to ``stream`` (stdout by default), flushed line by line.

    Flushing every line keeps the log in step with what the service does when stdout is a
    pipe to journald or a file, where Python would otherwise hold lines back in a buffer.
    """
    out = stream or sys.stdout
    processors: list[Processor] = [structlog.processors.add_log_level]
    factory: structlog.BytesLoggerFactory | structlog.WriteLoggerFactory
    if _for_people(out, log_format):
        processors += [
            structlog.processors.TimeStamper(fmt="%Y-%m-%d %H:%M:%S", utc=False),
            _sentence_alone,
            structlog.dev.ConsoleRenderer(
                colors=out.isatty(), exception_formatter=structlog.dev.plain_traceback
            ),
        ]
        factory = structlog.WriteLoggerFactory(file=out)
    else:
        processors += [
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(serializer=orjson.dumps, default=str),
        ]
        factory = structlog.BytesLoggerFactory(file=out.buffer)
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        logger_factory=factory,
        cache_logger_on_first_use=False,
    )
    logger: FilteringBoundLogger = structlog.get_logger()
    return logger


def log_to_stderr(log_format: str = "auto") -> None:
    """Sends what the parts log to stderr (structlog prints to stdout unless told), so that a
    command's stdout carries only what it means to print (``asz.output``)."""
    configure_logging(sys.stderr, log_format)


def _for_people(stream: TextIO, log_format: str) -> bool:
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format {log_format!r} is not one of {', '.join(LOG_FORMATS)}")
    if log_format == "auto":
        return stream.isatty()
    return log_format == "console"


def _sentence_alone(_logger: WrappedLogger, _name: str, event: EventDict) -> EventDict:
    """An event that says itself in a sentence is shown as that sentence: its keys are there
    for machines, which read the JSON log."""
    sentence = event.get(MESSAGE)
    if sentence is None:
        return event
    kept = {key: event[key] for key in ("timestamp", "level", "exc_info") if key in event}
    return {**kept, "event": sentence}
