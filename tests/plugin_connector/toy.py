"""A tiny connector living outside Headwater: an SQL Server-shaped `source` block (no `lsn`, no
`txId`: `change_lsn`, `commit_lsn`, `event_serial_no`), a snapshot of three rows and a stream
of one transaction with two updates of the same key, and its own position and event order.

It is registered only through the `headwater.connectors` entry point the test declares, so it
proves a connector needs no change to Headwater to be captured and materialized.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from headwater.config.loader import load_properties
from headwater.connectors.registry import (
    SNAPSHOT_MARKERS,
    CaptureConfig,
    ConnectorParts,
    ConnectorRegistration,
    EventOrder,
)
from headwater.converters.factory import JSON, SIMPLE_HEADER
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext, StartPlan
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.model.schema import (
    INT32,
    INT64,
    STRING,
    STRUCT,
    Column,
    ConnectSchema,
    TableId,
    TableSchema,
)
from headwater.model.source_block import COMMON_SOURCE_FIELDS, CONNECTOR_VERSION, source_field
from headwater.model.topic_naming import SCHEMA_STRATEGY, TopicNaming

CONNECTOR_CLASS = "org.example.toysql.ToySqlConnector"
SNAPSHOT_LSN = "00000027:00000758:0001"
TABLE = TableSchema(
    TableId("shop", "dbo", "items"),
    (Column("id", 0, "int", ConnectSchema(INT32, optional=False), fallback=0),
     Column("v", 1, "nvarchar", ConnectSchema(STRING, optional=True))),
    ("id",),
)
# The stream: one transaction (commit 0x...0900) updating id 1 twice, then inserting id 4.
STREAM = (
    (Op.UPDATE, (1, "one"), (1, "first"), "00000027:00000800:0002", 1),
    (Op.UPDATE, (1, "first"), (1, "second"), "00000027:00000800:0003", 2),
    (Op.CREATE, None, (4, "four"), "00000027:00000800:0004", 3),
)
COMMIT_LSN = "00000027:00000900:0001"


class ToyPosition(NamedTuple):
    commit_lsn: str
    change_lsn: str | None  # None for snapshot reads
    event_serial_no: int

    @property
    def order_key(self) -> tuple[str, str, int]:
        return (self.commit_lsn, self.change_lsn or "", self.event_serial_no)

    def source_fields(self) -> dict[str, Any]:
        return {"change_lsn": self.change_lsn, "commit_lsn": self.commit_lsn,
                "event_serial_no": self.event_serial_no}


class ToySourceBlock:
    schema = ConnectSchema(STRUCT, optional=False, name="io.debezium.connector.sqlserver.Source",
                           fields=(*COMMON_SOURCE_FIELDS, source_field("schema", STRING, False),
                                   source_field("table", STRING, False),
                                   source_field("change_lsn", STRING, True),
                                   source_field("commit_lsn", STRING, True),
                                   source_field("event_serial_no", INT64, True)))

    def payload(self, record: ChangeRecord) -> dict[str, Any]:
        table = record.table.id
        return {"version": record.context.connector_version, "connector": "toysql",
                "name": record.context.server_name, "ts_ms": record.source_ts_ms,
                "snapshot": record.snapshot, "db": table.database, "sequence": None,
                "schema": table.schema, "table": table.table,
                **record.position.source_fields()}


def _lsn(text: Any) -> str:
    """An SQL Server LSN "xxxxxxxx:xxxxxxxx:xxxx" as 20 sortable hex digits (none: zeros)."""
    return text.replace(":", "") if isinstance(text, str) else "0" * 20


def toy_sequence(source: dict[str, Any], _total_order: int | None, offset: int) -> str:
    """(commit LSN, snapshot-before-stream, change LSN, event serial number, topic offset)."""
    is_stream = 0 if source.get("snapshot") in SNAPSHOT_MARKERS else 1
    return (f"{_lsn(source.get('commit_lsn'))}{is_stream}{_lsn(source.get('change_lsn'))}"
            f"{source.get('event_serial_no') or 0:08x}{offset:016x}")


def toy_position(source: dict[str, Any]) -> tuple[Any, ...]:
    return (source.get("commit_lsn"), source.get("change_lsn"), source.get("event_serial_no"))


@dataclass(frozen=True)
class ToyConfig:
    """The CaptureConfig a toy connector needs (its own properties: none)."""

    topic_prefix: str
    headwater_topics_dir: Path
    offset_storage_file_filename: Path
    connector_class: str = CONNECTOR_CLASS
    max_queue_size: int = 100
    max_batch_size: int = 10
    poll_interval_ms: int = 50
    errors_max_retries: int = 0
    retriable_restart_connector_wait_ms: int = 100
    # (the runtime's defaults, spelled out: CaptureConfig asks for them)
    key_converter: str = JSON
    value_converter: str = JSON
    header_converter: str = SIMPLE_HEADER
    passthrough: Mapping[str, str] = field(default_factory=dict)
    key_converter_schemas_enable: bool = True
    value_converter_schemas_enable: bool = True
    tombstones_on_delete: bool = True
    extended_headers_enabled: bool = True
    provide_transaction_metadata: bool = False
    topic_transaction: str = "transaction"
    topic_heartbeat_prefix: str = "__debezium-heartbeat"
    topic_naming_strategy: str | None = None
    topic_delimiter: str = "."
    headwater_topics_segment_bytes: int = 1 << 20
    headwater_topics_segment_ms: int = 100
    extra: dict[str, str] = field(default_factory=dict)

    def redacted(self) -> dict[str, object]:
        return {"topic.prefix": self.topic_prefix, "connector.class": self.connector_class}


def load_config(path: Path) -> CaptureConfig:
    props = load_properties(path)
    base = path.parent.resolve()
    return ToyConfig(str(props["topic.prefix"]), base / str(props["headwater.topics.dir"]),
                     base / str(props["offset.storage.file.filename"]))


class ToySnapshot:
    def __init__(self, context: SourceContext) -> None:
        self.context = context

    def execute(self, ctx: SourceRunContext) -> dict[str, Any] | None:
        rows = [(1, "one"), (2, "two"), (3, "three")]
        records = [ChangeRecord(self.context, TABLE, Op.READ, None, row, 1000, 1000,
                                SnapshotMarker.LAST if i == len(rows) - 1 else SnapshotMarker.TRUE,
                                ToyPosition(SNAPSHOT_LSN, None, 0))
                   for i, row in enumerate(rows)]
        offset = {"commit_lsn": SNAPSHOT_LSN, "snapshot_completed": True}
        ctx.emit(Batch(records, offset=offset))
        return offset


class ToyStreaming:
    def __init__(self, context: SourceContext) -> None:
        self.context = context

    def execute(self, ctx: SourceRunContext, offset: dict[str, Any] | None) -> None:
        if not (offset or {}).get("streamed"):
            records = [ChangeRecord(self.context, TABLE, op, before, after, 2000, 2000,
                                    SnapshotMarker.FALSE, ToyPosition(COMMIT_LSN, lsn, serial))
                       for op, before, after, lsn, serial in STREAM]
            ctx.emit(Batch(records, offset={"commit_lsn": COMMIT_LSN, "snapshot_completed": True,
                                            "streamed": True}))
        while not ctx.stopping.wait(0.05):
            pass

    def acknowledge(self, token: Any) -> None:
        pass


class ToyConnector:
    def __init__(self, cfg: CaptureConfig) -> None:
        self._context = SourceContext("toysql", cfg.topic_prefix, CONNECTOR_VERSION)

    @property
    def context(self) -> SourceContext:
        return self._context

    @property
    def partition(self) -> dict[str, Any]:
        return {"server": self._context.server_name}

    def start(self, offset: dict[str, Any] | None) -> StartPlan:
        snapshot = None if (offset or {}).get("snapshot_completed") else ToySnapshot(self.context)
        return StartPlan(snapshot, ToyStreaming(self.context))

    def close(self) -> None:
        pass


def build(cfg: CaptureConfig, _metrics: CaptureMetrics, naming: TopicNaming) -> ConnectorParts:
    naming.check_tables([TABLE.id])  # before anything would be created at the source
    return ConnectorParts(ToyConnector(cfg), ToySourceBlock(), "__debezium_unavailable_value")


REGISTRATION = ConnectorRegistration(
    name="ToySQL",
    connector_classes=(CONNECTOR_CLASS,),
    source_connectors=("toysql",),
    load_config=load_config,
    build=build,
    order=EventOrder(toy_sequence, toy_position),  # no column-wise builder: event path
    default_topic_naming_strategy=SCHEMA_STRATEGY,
)
