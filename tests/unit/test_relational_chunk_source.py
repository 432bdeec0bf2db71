"""The relational chunk source PostgreSQL and MySQL subclass (relational.chunk_source), over a
recording DB-API connection: the chunk key it chooses, the SQL and parameters of a chunk read,
the keys it stores in offsets, its transaction, a refused table, and the watermark rows."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from headwater.config.signals import SignalConfig
from headwater.engine.incremental import IncrementalSnapshotError, SnapshotTable
from headwater.model.record import SourceContext
from headwater.model.schema import INT32, Column, ConnectSchema, TableId, TableSchema
from headwater.relational.chunk_source import ChunkTable, RelationalChunkSource, chunk_key

T = SnapshotTable(("db", "t"), "v > 5 AND name LIKE 'a%'")


class Conn:
    """Records every statement and transaction end; answers a SELECT with `rows`."""

    def __init__(self, rows: list[tuple[Any, ...]], fail: Exception | None = None) -> None:
        self.rows = rows
        self.fail = fail
        self.log: list[tuple[str, list[Any]]] = []

    def cursor(self) -> Conn:
        return self

    def execute(self, sql: str, params: Any = ()) -> None:
        self.log.append((sql, list(params or ())))
        if self.fail is not None and sql.startswith("SELECT"):
            raise self.fail

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.rows[-1] if self.rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows

    def commit(self) -> None:
        self.log.append(("COMMIT", []))

    def rollback(self) -> None:
        self.log.append(("ROLLBACK", []))

    def close(self) -> None:
        pass

    def __enter__(self) -> Conn:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class Dialect(RelationalChunkSource):
    """Backtick quoting, names folded to lower case, a composite primary key (id, k2)."""

    def __init__(self, conn: Conn, strategy: str = "insert_insert") -> None:
        super().__init__()
        self.conn = conn
        self.signals = SignalConfig(data_collection="db.sig", watermarking_strategy=strategy)
        self.signal_table = ("db", "sig")
        self.context = SourceContext("mysql", "p", "3.6")
        self.batch_size = 10

    def _open_rw(self) -> Conn:
        return self.conn

    def _open_ro(self) -> Conn:
        return self.conn

    def quote(self, name: str) -> str:
        return f"`{name}`"

    def same_name(self, a: str, b: str) -> bool:
        return a.lower() == b.lower()

    def _canonical(self, collection: tuple[str, ...]) -> tuple[str, ...]:
        return collection

    def _lookup(self, table: SnapshotTable) -> ChunkTable:
        schema = TableSchema(TableId("db", None, "t"), tuple(
            Column(c, i, "INT", ConnectSchema(INT32, True)) for i, c in enumerate(("ID", "v"))),
            ("ID",))
        return ChunkTable("`db`.`t`", ("ID", "v", "K2"), "`ID`, `v`, `K2`", schema, tuple,
                          ("id", "k2"))

    def _rows(self, cur: Any, sql: str, params: Any) -> Any:
        cur.execute(sql, params)
        return cur.fetchall()

    def _chunk_begin(self, cur: Any) -> str:
        cur.execute("BEGIN")
        return "begun"

    def _chunk_end(self, cur: Any, begun: Any) -> tuple[Any, None]:
        return f"high after {begun}", None

    def _refusal(self, exc: Exception) -> str | None:
        return "no such column" if isinstance(exc, LookupError) else None

    def _first_column(self, cur: Any, target: str) -> str:
        return "`id`"


def test_the_chunk_key_is_spelled_as_the_columns_are_and_refused_when_missing() -> None:
    same = str.__eq__
    assert chunk_key(SnapshotTable(("t",)), ("a", "b", "c"), ("c", "a"), same) == (
        ("c", "a"), (2, 0))
    assert chunk_key(SnapshotTable(("t",), None, "b"), ("a", "b"), ("a",), same) == (
        ("b",), (1,))
    with pytest.raises(IncrementalSnapshotError) as no_key:
        chunk_key(SnapshotTable(("t",)), ("a",), (), same)
    assert no_key.value.status == "NO_PRIMARY_KEY"
    with pytest.raises(IncrementalSnapshotError, match="surrogate key 'x' is not a column"):
        chunk_key(SnapshotTable(("t",), None, "x"), ("a",), ("a",), same)


def test_a_chunk_reads_after_the_last_key_up_to_the_maximum_in_one_transaction() -> None:
    conn = Conn([(Decimal("1.5"), 7, "b"), (Decimal("2.5"), 8, "a")])
    source = Dialect(conn)
    read = source.read_chunk(T, [{"decimal": "1.0"}, "z"], [{"decimal": "9.0"}, "a"], 50)
    sql, params = conn.log[1]
    assert conn.log[0][0] == "BEGIN" and conn.log[-1] == ("COMMIT", [])
    assert sql == (
        "SELECT `ID`, `v`, `K2` FROM `db`.`t` WHERE "
        "`ID` >= %s AND ((`ID` > %s) OR (`ID` = %s AND `K2` > %s)) AND "
        "`ID` <= %s AND ((`ID` < %s) OR (`ID` = %s AND `K2` < %s) OR (`ID` = %s AND `K2` = %s))"
        " AND (v > 5 AND name LIKE 'a%%') ORDER BY `ID`, `K2` LIMIT 50")
    low, high = Decimal("1.0"), Decimal("9.0")
    assert params == [low, low, low, "z", high, high, high, "a", high, "a"]
    assert [key for key, _ in read.rows] == [(Decimal("1.5"), "b"), (Decimal("2.5"), "a")]
    assert read.last_key == [{"decimal": "2.5"}, "a"]
    assert read.high == "high after begun"


def test_a_refused_table_is_skipped_and_its_read_rolled_back() -> None:
    conn = Conn([], fail=LookupError("gone"))
    with pytest.raises(IncrementalSnapshotError, match="no such column") as refused:
        Dialect(conn).read_chunk(T, None, [1, 2], 5)
    assert refused.value.status == "SQL_EXCEPTION"
    assert conn.log[-1] == ("ROLLBACK", [])
    with pytest.raises(RuntimeError):  # not the table's fault: the capture ends
        Dialect(Conn([], fail=RuntimeError("connection lost"))).max_key(T)


def test_the_maximum_key_is_the_last_in_key_order_and_stored_as_json() -> None:
    conn = Conn([(Decimal("3"), b"\x01")])
    assert Dialect(conn).max_key(T) == [{"decimal": "3"}, {"hex": "01"}]
    assert conn.log[0][0] == ("SELECT `ID`, `K2` FROM `db`.`t` WHERE (v > 5 AND name LIKE "
                              "'a%%') ORDER BY `ID` DESC, `K2` DESC LIMIT 1")


@pytest.mark.parametrize("strategy", ["insert_insert", "insert_delete"])
def test_watermarks_are_rows_of_the_signal_table(strategy: str) -> None:
    conn = Conn([])
    source = Dialect(conn, strategy)
    source.write_watermark("c1", True)
    source.write_watermark("c1", False)
    closing = (("DELETE FROM `db`.`sig` WHERE `id` = %s", ["c1-open"])
               if strategy == "insert_delete" else
               ("INSERT INTO `db`.`sig` VALUES (%s, %s, NULL)",
                ["c1-close", "snapshot-window-close"]))
    assert conn.log == [("INSERT INTO `db`.`sig` VALUES (%s, %s, NULL)",
                         ["c1-open", "snapshot-window-open"]), closing]
