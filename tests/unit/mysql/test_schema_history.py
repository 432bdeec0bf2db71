"""The persisted schema history: record / recover round trip, the include predicate, torn and
corrupt lines, clear."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import orjson
import pytest

from headwater.connectors.mysql.schema_catalog import MySqlSchema
from headwater.connectors.mysql.schema_history import FileSchemaHistory, SchemaHistoryError

STATEMENTS = [
    ("CREATE DATABASE shop CHARACTER SET latin1", None),
    ("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(5))", "shop"),
    ("ALTER TABLE t ADD w INT", "shop"),
    ("RENAME TABLE t TO u", "shop"),
    ("ALTER TABLE u DROP v", "shop"),
]


def _record_all(history: FileSchemaHistory) -> MySqlSchema:
    schema = MySqlSchema()
    for pos, (ddl, db) in enumerate(STATEMENTS, start=1):
        changes = schema.apply(ddl, db)
        history.record({"server_id": 1, "file": "bin.000001", "pos": pos * 100},
                       {"file": "bin.000001", "pos": pos * 100}, db, ddl, changes)
    return schema


def _upto(pos: int) -> Any:
    return lambda position: position["pos"] <= pos


def test_record_shape(tmp_path: Path) -> None:
    history = FileSchemaHistory(tmp_path / "hist" / "schema.jsonl")
    assert not history.exists()
    _record_all(history)
    assert history.exists()
    lines = history.path.read_bytes().splitlines()
    assert len(lines) == len(STATEMENTS)
    record = orjson.loads(lines[1])
    assert set(record) == {"source", "position", "ts_ms", "databaseName", "ddl", "tableChanges"}
    assert record["databaseName"] == "shop" and record["ddl"] == STATEMENTS[1][0]
    assert record["position"] == {"file": "bin.000001", "pos": 200}
    assert record["tableChanges"][0]["type"] == "CREATE"
    assert record["tableChanges"][0]["id"] == '"shop"."t"'
    assert orjson.loads(lines[0])["tableChanges"] == []  # CREATE DATABASE: no table change


def test_recover_round_trip(tmp_path: Path) -> None:
    history = FileSchemaHistory(tmp_path / "schema.jsonl")
    original = _record_all(history)
    recovered = MySqlSchema()
    assert history.recover(recovered, lambda _: True) == len(STATEMENTS)
    assert recovered.tables() == original.tables()
    table = recovered.table("shop", "u")
    assert table is not None and table.column("w").type_name == "INT"
    assert table.default_charset == "latin1"


def test_recover_stops_at_first_excluded_record(tmp_path: Path) -> None:
    history = FileSchemaHistory(tmp_path / "schema.jsonl")
    _record_all(history)
    schema = MySqlSchema()
    assert history.recover(schema, _upto(300)) == 3
    table = schema.table("shop", "t")
    assert table is not None and [c.name for c in table.columns] == ["id", "v", "w"]
    assert schema.table("shop", "u") is None
    # records after an excluded one are not replayed even if they would match
    seen: list[int] = []

    def include(p: dict[str, Any]) -> bool:
        seen.append(p["pos"])
        return bool(p["pos"] != 200)
    assert history.recover(MySqlSchema(), include) == 1
    assert seen == [100, 200]


def test_torn_last_line_is_ignored_then_cut(tmp_path: Path, caplog: Any) -> None:
    history = FileSchemaHistory(tmp_path / "schema.jsonl")
    _record_all(history)
    with history.path.open("ab") as f:
        f.write(b'{"source": {}, "position": {"pos": 999}, "ddl": "CREATE TA')
    with caplog.at_level(logging.WARNING):
        assert history.recover(MySqlSchema(), lambda _: True) == len(STATEMENTS)
    assert "torn" in caplog.text
    # the next record starts on a clean line: the torn bytes are gone
    again = FileSchemaHistory(history.path)
    again.record({}, {"pos": 600}, "shop", "ALTER TABLE u ADD z INT", [])
    schema = MySqlSchema()
    assert again.recover(schema, lambda _: True) == len(STATEMENTS) + 1
    table = schema.table("shop", "u")
    assert table is not None and table.columns[-1].name == "z"


def test_corrupt_middle_line_is_an_error_naming_file_and_line(tmp_path: Path) -> None:
    history = FileSchemaHistory(tmp_path / "schema.jsonl")
    _record_all(history)
    lines = history.path.read_bytes().splitlines(keepends=True)
    lines[2] = b'{"position": {"pos": 300}, "ddl": \n'
    history.path.write_bytes(b"".join(lines))
    with pytest.raises(SchemaHistoryError) as info:
        history.recover(MySqlSchema(), lambda _: True)
    assert str(history.path) in str(info.value) and "line 3" in str(info.value)


def test_unreplayable_record_is_an_error(tmp_path: Path) -> None:
    history = FileSchemaHistory(tmp_path / "schema.jsonl")
    history.record({}, {"pos": 1}, "db", "CREATE TABLE t (a NOTATYPE)", [])
    with pytest.raises(SchemaHistoryError, match="line 1 cannot be replayed"):
        history.recover(MySqlSchema(), lambda _: True)


def test_clear(tmp_path: Path) -> None:
    history = FileSchemaHistory(tmp_path / "schema.jsonl")
    _record_all(history)
    history.clear()
    assert history.exists() and history.path.read_bytes() == b""
    assert history.recover(MySqlSchema(), lambda _: True) == 0
    assert not list(tmp_path.glob("*.tmp"))


def test_recover_without_file(tmp_path: Path) -> None:
    assert FileSchemaHistory(tmp_path / "none.jsonl").recover(MySqlSchema(), lambda _: True) == 0
