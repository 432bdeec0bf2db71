"""The mapped diagnostic context (MDC) of Debezium's log lines: dbz.connectorType,
dbz.connectorName, dbz.connectorContext (snapshot, streaming), dbz.taskId, dbz.streamName.

Why a module of its own at the bottom: the engine (the reader's phase) and the connector loader
(the type) set these values, while the formatters that print them (`headwater.ops.logging`)
sit above both.

Why each key is a context variable *with a process-wide fallback*: a capture runs in several
threads (reader, writer, heartbeat, snapshot workers) and threads do not inherit context
variables; but one process runs one connector (a `headwater run`, a worker of `headwater
serve`), so a value set anywhere is the process's value, and a thread that sets its own
(the reader's phase) overrides it for itself.
"""

from __future__ import annotations

import contextvars
from typing import Final


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
