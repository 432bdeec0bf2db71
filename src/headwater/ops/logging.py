"""Logging set-up with Debezium's layout and mapped diagnostic context (MDC).

Debezium logs `[timestamp] LEVEL message (logger)` with MDC keys dbz.connectorType,
dbz.connectorName, dbz.connectorContext (snapshot, streaming) and dbz.taskId; every line of a
connector carries them here too, plus dbz.streamName for a stream's capture.

The keys are context variables kept in `headwater.log_context` (set from low in the
engine); this module formats them.

Two formats: `text` (Debezium's layout) and `json` (one object per line, for log shippers):
`--log-format json`, or `HEADWATER_LOG_FORMAT=json` in the environment (how `headwater serve`
passes it to its workers), or a connector's `headwater.ops.log.format=json`.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sys
import traceback
from typing import Final, TextIO

import orjson

from headwater.log_context import connector_context, connector_name, connector_type, mdc

FORMATS: Final = ("text", "json")
FORMAT_ENV: Final = "HEADWATER_LOG_FORMAT"


class _ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        parts = [p for p in (connector_type.get(), connector_name.get(), connector_context.get())
                 if p]
        record.dbz = "|".join(parts)
        record.mdc = mdc()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: timestamp, level, logger, thread, message, mdc, exception."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, object] = {
            "timestamp": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "thread": record.threadName,
            "message": record.getMessage(),
            "mdc": getattr(record, "mdc", None) or mdc(),
        }
        if record.exc_info:
            doc["exception"] = "".join(traceback.format_exception(*record.exc_info))
        return orjson.dumps(doc, default=str).decode()


def log_format(requested: str | None = None) -> str:
    """The format asked for, else the environment's, else text."""
    fmt = (requested or os.environ.get(FORMAT_ENV) or "text").lower()
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}: use {' or '.join(FORMATS)}")
    return fmt


def formatter(fmt: str) -> logging.Formatter:
    if fmt == "json":
        return JsonFormatter()
    return logging.Formatter("[%(asctime)s] %(levelname)s %(dbz)s %(message)s (%(name)s)")


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stderr` is when a record is emitted, not the one of set-up.

    A command run in-process (click's test runner, an embedding application) swaps
    `sys.stderr` and closes its replacement afterwards; a handler holding that stream would
    print logging's "--- Logging error ---" into the next command's output instead."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


def setup_logging(level: str = "INFO", fmt: str | None = None,
                  stream: TextIO | None = None) -> str:
    """Log to stderr (or `stream`) in `fmt`; returns the format used."""
    chosen = log_format(fmt)
    handler: logging.StreamHandler = (  # type: ignore[type-arg]
        logging.StreamHandler(stream) if stream is not None else _StderrHandler())
    handler.addFilter(_ContextFilter())
    handler.setFormatter(formatter(chosen))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    return chosen


def use_format(fmt: str) -> None:
    """Switch the handlers set up by `setup_logging` to `fmt` (a connector's property)."""
    chosen = log_format(fmt)
    for handler in logging.getLogger().handlers:
        handler.setFormatter(formatter(chosen))
