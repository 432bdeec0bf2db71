"""The change-table connectors' schema history without a server: table ids, the two
`tableChanges` forms, the order recovery compares positions in, recovery itself (partition,
last snapshot, corrupt records) and the schema state's CREATE/ALTER/skip rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from headwater.connectors.sqlserver.lsn import lsn_bytes
from headwater.connectors.sqlserver.position import SqlServerPosition, SqlServerSourceBlock
from headwater.model.record import SnapshotMarker, SourceContext
from headwater.model.schema import TableId
from headwater.relational.changetables.history import ChangeTableHistory, position_key
from headwater.relational.changetables.schema import ChangeTableSchema
from headwater.relational.changetables.schema_events import SchemaEventShape
from headwater.relational.history_file import HistoryFile, SchemaHistoryError
from headwater.relational.table_changes import (
    TableChange,
    change_document,
    change_struct,
    parse_id,
    quoted_id,
    table_from_document,
)
from headwater.relational.table_definition import ColumnDefinition, TableDefinition, jdbc_column

T = TableId("testDB", "dbo", "t")
CONTEXT = SourceContext("sqlserver", "server1", "3.0.0")
BASE = TableDefinition(T, (
    jdbc_column("id", 4, "int identity", 1, nullable=False, column_size=10, decimal_digits=0,
                auto_incremented=True),
    jdbc_column("price", 3, "decimal", 2, nullable=True, column_size=10, decimal_digits=2,
                default="((0))"),
), ("id",))
WIDER = TableDefinition(T, (*BASE.columns, jdbc_column(
    "note", -9, "nvarchar", 3, nullable=True, column_size=20, decimal_digits=None)), ("id",))


def lsn(n: int) -> str:
    return f"00000000:{n:08x}:ffff"


def change(n: int) -> str:
    return f"00000000:{n:08x}:0001"


def test_ids_are_double_quoted_and_read_back() -> None:
    assert quoted_id("testDB", "dbo", 'a"b') == '"testDB"."dbo"."a""b"'
    assert quoted_id(None, "DB2INST1", "T") == quoted_id("", "DB2INST1", "T") == \
        '"DB2INST1"."T"'
    assert parse_id('"testDB"."dbo"."a""b"') == ("testDB", "dbo", 'a"b')
    assert parse_id('"a.b".c') == ("a.b", "c")
    with pytest.raises(ValueError, match="unterminated"):
        parse_id('"x')


def test_history_json_of_a_column_is_debeziums() -> None:
    document = change_document(TableChange("CREATE", quoted_id("testDB", "dbo", "t"), BASE))
    assert document == {
        "type": "CREATE", "id": '"testDB"."dbo"."t"',
        "table": {"defaultCharsetName": None, "primaryKeyColumnNames": ["id"], "columns": [
            {"name": "id", "jdbcType": 4, "typeName": "int identity",
             "typeExpression": "int identity", "charsetName": None, "length": 10, "scale": 0,
             "position": 1, "optional": False, "autoIncremented": True, "generated": False,
             "comment": None, "hasDefaultValue": False, "enumValues": []},
            {"name": "price", "jdbcType": 3, "typeName": "decimal", "typeExpression": "decimal",
             "charsetName": None, "length": 10, "scale": 2, "position": 2, "optional": True,
             "autoIncremented": False, "generated": False, "comment": None,
             "hasDefaultValue": True, "defaultValueExpression": "((0))", "enumValues": []},
        ], "attributes": []},
        "comment": None}
    assert table_from_document(document, T) == BASE


def test_event_struct_of_a_column_is_debeziums() -> None:
    struct = change_struct(TableChange("ALTER", '"testDB"."dbo"."t"', BASE))
    assert struct["table"]["columns"][1] == {
        "name": "price", "jdbcType": 3, "nativeType": None, "typeName": "decimal",
        "typeExpression": "decimal", "charsetName": None, "length": 10, "scale": 2,
        "position": 2, "optional": True, "autoIncremented": False, "generated": False,
        "comment": None, "defaultValueExpression": "((0))", "enumValues": None}
    assert set(struct["table"]) == {"defaultCharsetName", "primaryKeyColumnNames", "columns",
                                    "comment"}


def test_positions_order_as_the_poller_orders_changes() -> None:
    def key(commit: str, change_lsn: str | None, serial: int | None) -> Any:
        return position_key({"commit_lsn": commit, "change_lsn": change_lsn,
                             "event_serial_no": serial}, lsn_bytes)

    snapshot = key(lsn(1), None, 1)  # a snapshot's position ends its commit
    assert snapshot == key(lsn(1), None, None) == key(lsn(1), None, 0)
    assert key(lsn(1), change(1), 2) < snapshot
    assert key(lsn(2), change(2), 1) < key(lsn(2), change(2), 2) < key(lsn(2), change(3), 1)
    assert key(lsn(2), change(3), 9) < key(lsn(2), None, 0) < key(lsn(3), change(1), 1)


def _history(tmp_path: Path) -> ChangeTableHistory:
    shape = SchemaEventShape(CONTEXT, SqlServerSourceBlock())
    return ChangeTableHistory(HistoryFile(tmp_path / "h.jsonl"), lsn_bytes, shape.table_id)


def _schema(tmp_path: Path, **kwargs: Any) -> ChangeTableSchema:
    shape = SchemaEventShape(CONTEXT, SqlServerSourceBlock())
    return ChangeTableSchema(shape, _history(tmp_path), **kwargs)


def test_recovery_applies_what_is_at_or_before_the_stored_offset(tmp_path: Path) -> None:
    schema = _schema(tmp_path)
    schema.snapshot([BASE], SqlServerPosition(lsn(1), None, None), last=False)
    schema.alter(WIDER, SqlServerPosition(lsn(3), change(3), 1))
    again = _schema(tmp_path)
    for stored, expected in (
            ({"commit_lsn": lsn(1), "change_lsn": None, "event_serial_no": None}, BASE),
            ({"commit_lsn": lsn(3), "change_lsn": change(2), "event_serial_no": 2}, BASE),
            ({"commit_lsn": lsn(3), "change_lsn": change(3), "event_serial_no": 1}, WIDER),
            # after an idle poll (no change LSN): Debezium's comparator would drop the ALTER
            ({"commit_lsn": lsn(4), "change_lsn": None, "event_serial_no": 0}, WIDER)):
        again.recover("testDB", stored)
        assert again.definition(T) == expected, stored
    again.recover("otherDB", {"commit_lsn": lsn(9), "change_lsn": None})
    assert again.tables == {}  # another database's partition


def test_recovery_starts_at_the_last_snapshot(tmp_path: Path) -> None:
    history = _history(tmp_path)
    history.store.clears = False  # as a Kafka topic: a new snapshot appends
    schema = _schema(tmp_path)
    schema.history = history
    other = TableDefinition(TableId("testDB", "dbo", "gone"), BASE.columns, ("id",))
    schema.snapshot([BASE, other], SqlServerPosition(lsn(1), None, None), last=True)
    schema.snapshot([WIDER], SqlServerPosition(lsn(5), None, None), last=True)
    schema.recover("testDB", {"commit_lsn": lsn(6), "change_lsn": None})
    assert schema.tables == {T: WIDER}


def test_a_corrupt_record_is_an_error_naming_the_file_and_line(tmp_path: Path) -> None:
    schema = _schema(tmp_path)
    schema.snapshot([BASE], SqlServerPosition(lsn(1), None, None), last=False)
    path = tmp_path / "h.jsonl"
    record = orjson.loads(path.read_bytes())
    del record["tableChanges"][0]["table"]["columns"][0]["jdbcType"]
    path.write_bytes(orjson.dumps(record) + b"\n")
    with pytest.raises(SchemaHistoryError, match=r"h\.jsonl: line 1 cannot be recovered"):
        schema.recover("testDB", {"commit_lsn": lsn(1), "change_lsn": None})


def test_alter_only_when_the_definition_changed(tmp_path: Path) -> None:
    schema = _schema(tmp_path)
    schema.snapshot([BASE], SqlServerPosition(lsn(1), None, None), last=False)
    same = TableDefinition(T, tuple(ColumnDefinition(**{
        f: getattr(c, f) for f in c.__slots__}) for c in BASE.columns), ("id",))
    assert schema.alter(same, SqlServerPosition(lsn(2), change(2), 1)) == []
    events = schema.alter(WIDER, SqlServerPosition(lsn(2), change(2), 1))
    assert [e.value["tableChanges"][0]["type"] for e in events] == ["ALTER"]
    assert events[0].value["ddl"] == "N/A"
    assert events[0].value["source"]["snapshot"] is SnapshotMarker.FALSE
    lines = (tmp_path / "h.jsonl").read_bytes().splitlines()
    assert [orjson.loads(x)["tableChanges"][0]["type"] for x in lines] == ["CREATE", "ALTER"]


def test_without_schema_change_events_the_history_is_still_written(tmp_path: Path) -> None:
    schema = _schema(tmp_path, include_events=False)
    assert schema.snapshot([BASE], SqlServerPosition(lsn(1), None, None), last=True) == []
    new_table = TableDefinition(TableId("testDB", "dbo", "u"), WIDER.columns)
    assert schema.create(new_table, SqlServerPosition(lsn(2), None, 0)) == []
    assert len((tmp_path / "h.jsonl").read_bytes().splitlines()) == 2


def test_store_only_captured_databases_skips_other_schemas(tmp_path: Path) -> None:
    schema = _schema(tmp_path, skip=lambda table: table.schema != "dbo")
    hidden = TableDefinition(TableId("testDB", "audit", "log"), BASE.columns)
    events = schema.snapshot([BASE, hidden], SqlServerPosition(lsn(1), None, None), last=True)
    assert [e.value["source"]["table"] for e in events] == ["t"]
    assert events[0].value["source"]["snapshot"] is SnapshotMarker.LAST
    assert len((tmp_path / "h.jsonl").read_bytes().splitlines()) == 1
