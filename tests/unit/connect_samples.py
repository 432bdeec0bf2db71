"""Sample change records of several tables and types, shared by the structured-path tests."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from headwater.connectors.postgres.position import PostgresPosition, PostgresSourceBlock
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.model.record import (
    ABSENT,
    UNCHANGED_TOAST,
    ChangeRecord,
    HeartbeatEvent,
    Op,
    SnapshotMarker,
    SourceContext,
    SourceEvent,
    TransactionEvent,
    TxInfo,
)
from headwater.model.schema import (
    ARRAY,
    BOOLEAN,
    BYTES,
    FLOAT64,
    INT16,
    INT32,
    INT64,
    STRING,
    Column,
    ConnectSchema,
    TableId,
    TableSchema,
)

CTX = SourceContext("postgresql", "inv", "3.0.0.Final")
POS = PostgresPosition(24023128, 24023128, 24023119, 555)

CUSTOMERS = TableSchema(TableId("db", "public", "customers"), (
    Column("id", 0, "int4", ConnectSchema(INT32, optional=False), fallback=0),
    Column("first_name", 1, "varchar", ConnectSchema(STRING, optional=False), fallback=""),
    Column("email", 2, "varchar", ConnectSchema(STRING, optional=True)),
), ("id",))

DECIMAL = ConnectSchema(INT64, optional=True)  # placeholder replaced below
PRICE = ConnectSchema(BYTES, optional=True, name="org.apache.kafka.connect.data.Decimal",
                      version=1, parameters={"scale": "2", "connect.decimal.precision": "10"})
TS = ConnectSchema(INT64, optional=True, name="io.debezium.time.MicroTimestamp", version=1)
ITEMS = TableSchema(TableId("db", "shop", "items"), (
    Column("order_id", 0, "int8", ConnectSchema(INT64, optional=False), fallback=0),
    Column("line", 1, "int2", ConnectSchema(INT16, optional=False), fallback=0),
    Column("price", 2, "numeric", PRICE),
    Column("weight", 3, "float8", ConnectSchema(FLOAT64, optional=True)),
    Column("ok", 4, "bool", ConnectSchema(BOOLEAN, optional=True)),
    Column("blob", 5, "bytea", ConnectSchema(BYTES, optional=True)),
    Column("tags", 6, "_text", ConnectSchema(ARRAY, optional=True,
                                             items=ConnectSchema(STRING, optional=True))),
    Column("at", 7, "timestamp", TS),
    Column("note", 8, "text", ConnectSchema(STRING, optional=True)),
), ("order_id", "line"))
LOGS = TableSchema(TableId("db", "public", "logs"), (
    Column("msg", 0, "text", ConnectSchema(STRING, optional=True)),
), ())


def rec(table: TableSchema, op: Op, before: Any, after: Any, **kw: Any) -> ChangeRecord:
    args: dict[str, Any] = {
        "context": CTX, "table": table, "op": op, "before": before, "after": after,
        "source_ts_ms": 1700000000123, "processed_ts_ms": 1700000000456,
        "snapshot": SnapshotMarker.FALSE, "position": POS,
    }
    args.update(kw)
    return ChangeRecord(**args)


ITEM = (7, 1, Decimal("12.34"), 1.5, True, b"\x00\xff", ["a", None], 1700000000123456, "x")
ITEM2 = (7, 1, Decimal("-0.01"), None, None, None, None, None, UNCHANGED_TOAST)


def samples() -> list[SourceEvent]:
    tx = TxInfo("555:24023128", 3, 1)
    return [
        rec(CUSTOMERS, Op.READ, None, (1, "Anne", "a@x"), snapshot=SnapshotMarker.FIRST),
        rec(CUSTOMERS, Op.CREATE, None, (2, "Bob", None)),
        rec(CUSTOMERS, Op.UPDATE, (2, "Bob", None), (2, "Bobby", "b@x")),
        rec(CUSTOMERS, Op.DELETE, (2, ABSENT, ABSENT), None),
        rec(CUSTOMERS, Op.DELETE, (3, "C", None), None, other_key=(4, "C", None)),
        rec(CUSTOMERS, Op.CREATE, None, (4, "C", None), other_key=(3, "C", None)),
        rec(ITEMS, Op.CREATE, None, ITEM, tx=tx),
        rec(ITEMS, Op.UPDATE, ITEM, ITEM2, tx=tx),
        rec(ITEMS, Op.DELETE, ITEM2, None),
        rec(LOGS, Op.CREATE, None, ("hello",)),
        rec(LOGS, Op.DELETE, ("hello",), None),
        rec(ITEMS, Op.TRUNCATE, None, None),
        TransactionEvent(CTX, "END", "555:24023128", 1700000000999, 2,
                         (("shop.items", 2),), POS),
        HeartbeatEvent(CTX, 1700000001000, POS),
    ]


def debezium_format(**kw: Any) -> DebeziumJsonFormat:
    kw.setdefault("provide_transaction_metadata", True)
    kw.setdefault("run_id", "run-1")
    return DebeziumJsonFormat(PostgresSourceBlock(), **kw)
