"""The one internal change record that every output format is a pure function of.

It carries more than any single format needs (inventory section 5.1): the Debezium envelope needs
before/after, the source block and transaction order; Datastream needs a full-row image, a
deterministic uuid source (position) and the read method.  Row images are tuples aligned with
`TableSchema.columns`, holding values already converted to their Connect representation.

The record is a NamedTuple rather than a frozen dataclass on purpose: it is built once per row
change on the capture hot path, and tuple construction is several times cheaper than a frozen
dataclass `__init__` (which pays an `object.__setattr__` per field).
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

from headwater.model.schema import ConnectSchema, TableSchema


class Op(enum.Enum):
    """Row operation; values are Debezium's `op` codes."""

    CREATE = "c"
    UPDATE = "u"
    DELETE = "d"
    READ = "r"
    TRUNCATE = "t"
    MESSAGE = "m"


class SnapshotMarker(enum.Enum):
    """Debezium `source.snapshot`: a string enum (1.x: true, last, false, incremental).

    Debezium 3.x also marks the first record of the snapshot (`first`) and the first and last
    record of each table (`first_in_data_collection`, `last_in_data_collection`); `resolve`
    is its precedence.
    """

    FALSE = "false"
    TRUE = "true"
    FIRST = "first"
    FIRST_IN_DATA_COLLECTION = "first_in_data_collection"
    LAST_IN_DATA_COLLECTION = "last_in_data_collection"
    LAST = "last"
    INCREMENTAL = "incremental"

    @staticmethod
    def resolve(
        first_in_snapshot: bool, last_in_snapshot: bool, first_in_table: bool, last_in_table: bool
    ) -> SnapshotMarker:
        """The marker of one snapshot record, with Debezium 3.x's precedence (last wins)."""
        if last_in_snapshot:
            return SnapshotMarker.LAST
        if first_in_snapshot:
            return SnapshotMarker.FIRST
        if last_in_table:
            return SnapshotMarker.LAST_IN_DATA_COLLECTION
        if first_in_table:
            return SnapshotMarker.FIRST_IN_DATA_COLLECTION
        return SnapshotMarker.TRUE


class _Sentinel:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> str:
        return self._name


# A value the source did not send (e.g. non-key columns of a REPLICA IDENTITY DEFAULT delete).
ABSENT: Any = _Sentinel("ABSENT")
# An unchanged TOASTed value the source did not send; rendered as toasted.value.placeholder.
UNCHANGED_TOAST: Any = _Sentinel("UNCHANGED_TOAST")


class TxInfo(NamedTuple):
    """Transaction position of a data event (Debezium `transaction` block)."""

    id: str
    total_order: int
    data_collection_order: int

    def block(self) -> dict[str, Any]:
        """The event's `transaction` block (Debezium's field order)."""
        return {"id": self.id, "total_order": self.total_order,
                "data_collection_order": self.data_collection_order}


class SourceContext(NamedTuple):
    """What is constant for every event of one connector instance."""

    kind: str  # "postgresql", "mysql", ...
    server_name: str  # topic.prefix, Debezium `source.name`
    connector_version: str  # Debezium `source.version`


class ChangeRecord(NamedTuple):
    """One row-level change (or a table-level one such as TRUNCATE)."""

    context: SourceContext
    table: TableSchema
    op: Op
    before: tuple[Any, ...] | None
    after: tuple[Any, ...] | None
    source_ts_ms: int  # commit time at the source (snapshot: read time)
    processed_ts_ms: int  # time the connector processed the change
    snapshot: SnapshotMarker
    # Connector-specific position (e.g. PostgresPosition); comparable within one connector.
    position: Any
    tx: TxInfo | None = None
    # On the two halves of a primary-key change, the other half's row image: the new row on
    # the delete (Debezium header __debezium.newkey), the old row on the create (oldkey).
    other_key: tuple[Any, ...] | None = None


class TransactionEvent(NamedTuple):
    """A transaction boundary (Debezium `provide.transaction.metadata`): BEGIN or END."""

    context: SourceContext
    status: str  # "BEGIN" or "END"
    id: str
    ts_ms: int
    # END only: events of the transaction, in total and per table ("schema.table", count).
    event_count: int | None
    data_collections: tuple[tuple[str, int], ...] | None
    position: Any


class HeartbeatEvent(NamedTuple):
    """A heartbeat: proof of life and a position to store while captured tables are idle."""

    context: SourceContext
    ts_ms: int
    position: Any


class SchemaChangeEvent(NamedTuple):
    """A schema change (Debezium's schema change topic `<topic.prefix>`), e.g. MySQL DDL.

    The connector builds key and value (with their Connect schemas, named after it:
    `io.debezium.connector.<connector>.SchemaChangeKey` / `...Value`, defined once in
    relational.table_changes); the format only wraps them, so it stays ignorant of any
    database.
    """

    context: SourceContext
    database: str
    ts_ms: int
    key_schema: ConnectSchema
    key: dict[str, Any]
    value_schema: ConnectSchema
    value: dict[str, Any]
    position: Any


# What sources put on the queue and formats render.
SourceEvent = ChangeRecord | TransactionEvent | HeartbeatEvent | SchemaChangeEvent
