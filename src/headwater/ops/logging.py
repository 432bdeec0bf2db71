"""Logging set-up with Debezium's layout and mapped diagnostic context (MDC).

Debezium logs `[timestamp] LEVEL message (logger)` with MDC keys dbz.connectorType,
dbz.connectorName, dbz.connectorContext (snapshot, streaming) and dbz.taskId; every line of a
connector carries them here too, plus dbz.streamName for a stream's capture.

Why each key is a context variable *with a process-wide fallback*: a capture runs in several
threads (reader, writer, heartbeat, snapshot workers) and threads do not inherit context
variables; but one process runs one connector (a `headwater run`, a worker of `headwater
serve`), so a value set anywhere is the process's value, and a thread that sets its own
(the reader's phase) overrides it for itself.

Two formats: `text` (Debezium's layout) and `json` (one object per line, for log shippers):
`--log-format json`, or `HEADWATER_LOG_FORMAT=json` in the environment (how `headwater serve`
passes it to its workers), or a connector's `headwater.ops.log.format=json`.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import logging
import os
import sys
import traceback
from typing import Final, TextIO

import orjson

FORMATS: Final = ("text", "json")
FORMAT_ENV: Final = "HEADWATER_LOG_FORMAT"


class MdcVar:
    """A context variable whose last value set in the process is the default of every
    thread that has not set its own."""

    def __init__(self, key: str) -> None:
        self.key = key
        self._var: contextvars.ContextVar[str | None] = contextvars.ContextVar(key, default=None)
        self._process = ""

    def set(self, value: str) -> None:
        self._var.set(value)
        self._process = value

    def set_local(self, value: str) -> None:
        """This thread (context) only."""
        self._var.set(value)

    def get(self) -> str:
        value = self._var.get()
        return self._process if value is None else value


connector_type: Final = MdcVar("dbz.connectorType")
connector_name: Final = MdcVar("dbz.connectorName")
connector_context: Final = MdcVar("dbz.connectorContext")
task_id: Final = MdcVar("dbz.taskId")
stream_name: Final = MdcVar("dbz.streamName")
MDC: Final = (connector_type, connector_name, connector_context, task_id, stream_name)


def mdc() -> dict[str, str]:
    """The MDC of the calling thread (keys with a value)."""
    return {v.key: value for v in MDC if (value := v.get())}


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


def setup_logging(level: str = "INFO", fmt: str | None = None,
                  stream: TextIO | None = None) -> str:
    """Log to stderr (or `stream`) in `fmt`; returns the format used."""
    chosen = log_format(fmt)
    handler = logging.StreamHandler(stream or sys.stderr)
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
