"""Logging set-up with Debezium's layout and mapped diagnostic context.

Debezium logs `[timestamp] LEVEL message (logger)` with MDC keys dbz.connectorType,
dbz.connectorName and dbz.connectorContext; we keep the same keys in a contextvar so a line
says which connector and which phase (snapshot, streaming) wrote it.
"""

from __future__ import annotations

import contextvars
import logging
import sys

connector_type: contextvars.ContextVar[str] = contextvars.ContextVar(
    "dbz.connectorType", default=""
)
connector_name: contextvars.ContextVar[str] = contextvars.ContextVar(
    "dbz.connectorName", default=""
)
connector_context: contextvars.ContextVar[str] = contextvars.ContextVar(
    "dbz.connectorContext", default=""
)


class _ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        parts = [p for p in (connector_type.get(), connector_name.get(), connector_context.get())
                 if p]
        record.dbz = "|".join(parts)
        return True


def setup_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_ContextFilter())
    handler.setFormatter(logging.Formatter(
        "[%(asctime)s] %(levelname)s %(dbz)s %(message)s (%(name)s)"
    ))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
