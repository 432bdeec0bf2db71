"""The seam between the database-independent runtime and a connector.

A connector is a few small objects: it inspects the stored offset and the database and says
which sources to run (`start`), a snapshot source emits READ records, a streaming source emits
changes until asked to stop and learns, through `acknowledge`, which of its positions are
durable.  The runtime never asks which database it is talking to.
"""

from __future__ import annotations

import enum
import threading
from typing import Any, NamedTuple, Protocol

from headwater.engine.metrics import CaptureMetrics
from headwater.engine.queue import Batch
from headwater.model.record import SourceContext
from headwater.model.source_block import CONNECTOR_VERSION
from headwater.model.topic_naming import TopicNaming


class StreamState(enum.StrEnum):
    """Lifecycle of a capture stream: Datastream's `Stream.State` names, for the runtime and
    for the streams' catalog (streams.states.State is this enum)."""

    NOT_STARTED = "NOT_STARTED"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    DRAINING = "DRAINING"
    PAUSED = "PAUSED"
    FAILED = "FAILED"
    FAILED_PERMANENTLY = "FAILED_PERMANENTLY"
    # Datastream: "updates are rejected on the resource in this state".  Headwater has no
    # maintenance of its own; the state exists for API compatibility and nothing enters it.
    MAINTENANCE = "MAINTENANCE"


class RetriableError(Exception):
    """A transient failure (lost connection, server restart): the runtime reconnects.

    Connectors raise it only for conditions a retry can fix; everything else stops the
    connector with its own error message.

    `reconnect_after_s`: the connector's own reconnect policy asks for this wait instead of
    the runtime's back-off, outside `errors.max.retries` (MySQL's `connect.keep.alive`:
    Debezium's binlog client reconnects a lost connection itself, without counting it as a
    failure of the task).  A reconnect that then fails is an ordinary retriable failure.
    """

    def __init__(self, message: str, *, reconnect_after_s: float | None = None) -> None:
        super().__init__(message)
        self.reconnect_after_s = reconnect_after_s


class SourceRunContext:
    """What a running source may use: the queue, the stop signal and the output format.

    `renderer` (the runtime's record renderer, picklable) lets a source render records itself,
    e.g. in worker processes, and emit `Batch(rendered=...)`; None when the runtime has none.
    """

    def __init__(self, emit: Any, stopping: threading.Event, renderer: Any = None) -> None:
        self._emit = emit
        self.stopping = stopping
        self.renderer = renderer

    def emit(self, batch: Batch) -> None:
        """Hand a batch to the writer; blocks while the queue is full (back-pressure)."""
        self._emit(batch)


class SnapshotSource(Protocol):
    def execute(self, ctx: SourceRunContext) -> dict[str, Any] | None:
        """Emit the snapshot; return the offset streaming starts from (None if stopped early)."""
        ...


class StreamingSource(Protocol):
    def execute(self, ctx: SourceRunContext, offset: dict[str, Any] | None) -> None:
        """Emit changes from `offset` until `ctx.stopping` is set or the source fails."""
        ...

    def acknowledge(self, token: Any) -> None:
        """Called from the writer thread once everything up to `token` is durable."""
        ...


class StartPlan(NamedTuple):
    """`data_snapshot`: the snapshot reads the tables' rows (an initial snapshot, or one that
    `snapshot.mode` asks for again), so a restart of it must supersede its partial output."""

    snapshot: SnapshotSource | None
    streaming: StreamingSource | None
    data_snapshot: bool = False


class Connector(Protocol):
    @property
    def context(self) -> SourceContext: ...

    @property
    def partition(self) -> dict[str, Any]:
        """The source partition offsets are stored under (Debezium: {"server": name})."""
        ...

    def start(self, offset: dict[str, Any] | None) -> StartPlan: ...

    def close(self) -> None: ...


class ConnectorBase:
    """What every connector keeps: its metrics, its topic naming, its SourceContext (kind,
    topic prefix, Headwater's version), the partition its offsets are stored under, and
    `_started` (set once it has run: a lost connection after that is retriable)."""

    def __init__(self, kind: str, topic_prefix: str, partition: dict[str, Any],
                 metrics: CaptureMetrics | None = None,
                 naming: TopicNaming | None = None) -> None:
        self.metrics = metrics or CaptureMetrics()
        self.naming = naming
        self._context = SourceContext(kind, topic_prefix, CONNECTOR_VERSION)
        self._partition = partition
        self._started = False

    @property
    def context(self) -> SourceContext:
        return self._context

    @property
    def partition(self) -> dict[str, Any]:
        """The source partition offsets are stored under (Debezium's: {"server": name}, for
        MongoDB {"server_id": name})."""
        return self._partition
