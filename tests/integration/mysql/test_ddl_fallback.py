"""No DDL problem loses a row (issue 13), against a real MariaDB.

A statement our parser refuses although the server accepts it is made by patching the parser
to reject statements carrying the marker comment below (the parser itself is meant to accept
everything MariaDB does).  With schema.history.internal.skip.unparseable.ddl the rows of the
tables such a statement creates or changes are decoded from the binlog's TABLE_MAP metadata;
without it, capture stops with an error naming statement, database and position; without
binlog_row_metadata=FULL the fallback stops capture instead of dropping rows.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
import pytest

from headwater.connectors.mysql import schema_catalog
from headwater.connectors.mysql.ddl import DdlParseError
from headwater.testing.replay import events

from .conftest import MariaEnv, wait_for

pytestmark = pytest.mark.integration

MARKER = "/* hw-unparseable */"
SKIP = {"schema.history.internal.skip.unparseable.ddl": "true", "decimal.handling.mode": "string"}


@pytest.fixture(autouse=True)
def refuse_marked_statements(monkeypatch: pytest.MonkeyPatch) -> None:
    original = schema_catalog.MySqlSchema.apply

    def apply(self: schema_catalog.MySqlSchema, sql: str, database: str | None,
              ansi_quotes: bool | None = None) -> Any:
        if MARKER in sql:
            raise DdlParseError("refused by the test", sql, 0, sql.split(maxsplit=1)[0])
        return original(self, sql, database, ansi_quotes)

    monkeypatch.setattr(schema_catalog.MySqlSchema, "apply", apply)


def values(env: MariaEnv, table: str) -> list[tuple[Any, Any]]:
    return [(k, v) for _, k, v in events(env.topics, env.topic(table))]


def started(env: MariaEnv, extra: dict[str, Any]) -> Any:
    env.sql("CREATE TABLE anchor (id INT PRIMARY KEY)")
    cap = env.capture(extra)
    # Streaming, not merely started: a statement made during the snapshot would reach the
    # history through SHOW CREATE TABLE (parsed fine) and its rows as snapshot reads.
    metrics = cap.runtime.metrics
    wait_for(lambda: metrics.snapshot_completed and metrics.connected and env.offsets.exists()
             and "file" in offset(env), what="streaming from a binlog position")
    return cap


def offset(env: MariaEnv) -> dict[str, Any]:
    stored: dict[str, Any] = orjson.loads(env.offsets.read_bytes())["offset"]
    return stored


def test_rows_of_a_table_created_by_unparseable_ddl_all_arrive(
        menv: MariaEnv, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="headwater.connectors.mysql")
    cap = started(menv, SKIP)
    try:
        menv.sql("CREATE TABLE t (id INT UNSIGNED NOT NULL, name VARCHAR(20) NOT NULL, "
                 "price DECIMAL(10,2), kind ENUM('a','b') NOT NULL, note TEXT, "
                 f"PRIMARY KEY (id)) {MARKER}")
        menv.sql("INSERT INTO t VALUES (1, 'one', 1.50, 'a', NULL), "
                 "(4000000000, 'big', -2.25, 'b', 'x')")
        menv.sql("INSERT INTO t VALUES (3, 'three', NULL, 'a', 'tt')")
        menv.sql("UPDATE t SET name = 'uno', price = 9.99 WHERE id = 1")
        menv.sql("DELETE FROM t WHERE id = 3")
        wait_for(lambda: len(values(menv, "t")) >= 6, what="every row change of t")
    finally:
        cap.stop()
    evs = values(menv, "t")
    assert [v["op"] if v else None for _, v in evs] == ["c", "c", "c", "u", "d", None]
    assert [k for k, _ in evs] == [{"id": 1}, {"id": 4000000000}, {"id": 3}, {"id": 1},
                                   {"id": 3}, {"id": 3}]
    assert evs[0][1]["after"] == {"id": 1, "name": "one", "price": "1.50", "kind": "a",
                                  "note": None}
    assert evs[1][1]["after"] == {"id": 4000000000, "name": "big", "price": "-2.25",
                                  "kind": "b", "note": "x"}
    assert evs[3][1]["before"]["name"] == "one"
    assert evs[3][1]["after"] == {"id": 1, "name": "uno", "price": "9.99", "kind": "a",
                                  "note": None}
    assert evs[4][1]["before"]["name"] == "three" and evs[4][1]["after"] is None
    warnings = [r.getMessage() for r in caplog.records if "decoded with the definition" in
                r.getMessage()]
    assert len(warnings) == 1, warnings  # once per table definition, not per row
    assert f"{menv.db}.t" in warnings[0] and "does not know" in warnings[0]
    assert MARKER not in menv.history.read_text()  # nothing invented in the history


def test_rows_after_an_unparseable_alter_are_decoded_with_the_new_column(
        menv: MariaEnv, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="headwater.connectors.mysql")
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))")
    cap = started(menv, SKIP)
    try:
        menv.sql("INSERT INTO t VALUES (1, 'before')")
        menv.sql(f"ALTER TABLE t ADD COLUMN extra INT NOT NULL DEFAULT 5 AFTER id {MARKER}")
        menv.sql("INSERT INTO t VALUES (2, 7, 'after')")
        menv.sql("UPDATE t SET v = 'changed' WHERE id = 1")
        wait_for(lambda: len(values(menv, "t")) >= 3, what="row changes of t")
    finally:
        cap.stop()
    evs = [v for _, v in values(menv, "t")]
    assert [v["op"] for v in evs] == ["c", "c", "u"]
    assert evs[0]["after"] == {"id": 1, "v": "before"}
    assert evs[1]["after"] == {"id": 2, "extra": 7, "v": "after"}
    assert evs[2]["before"] == {"id": 1, "extra": 5, "v": "before"}
    assert evs[2]["after"] == {"id": 1, "extra": 5, "v": "changed"}
    warnings = [r.getMessage() for r in caplog.records if "decoded with the definition" in
                r.getMessage()]
    assert len(warnings) == 1 and "out of date" in warnings[0]
    assert "the binlog has 3 columns, the schema history 2" in warnings[0]


def test_without_skipping_the_error_names_statement_database_and_position(
        menv: MariaEnv) -> None:
    cap = started(menv, {})
    before = offset(menv)
    menv.sql(f"CREATE TABLE refused (id INT PRIMARY KEY) {MARKER}")
    menv.sql("INSERT INTO anchor VALUES (1)")
    cap.thread.join(60)
    with pytest.raises(Exception, match="cannot parse DDL") as info:
        cap.stop()
    message = str(info.value)
    assert "CREATE TABLE refused (id INT PRIMARY KEY)" in message
    assert f"(database {menv.db})" in message
    with menv.conn.cursor() as cur:
        cur.execute("SHOW BINLOG EVENTS IN %s", (before["file"],))
        query = [r for r in cur.fetchall() if "CREATE TABLE refused" in str(r[5])]
    file, pos = before["file"], int(query[0][1])
    assert f"binlog position {file}:{pos} " in message
    after = offset(menv)  # nothing past the statement was acknowledged
    assert (after["file"], int(after["pos"])) <= (file, pos)


def test_minimal_row_metadata_warns_at_start_and_fails_instead_of_dropping(
        menv: MariaEnv, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="headwater.connectors.mysql")
    menv.sql("SET GLOBAL binlog_row_metadata = 'MINIMAL'")
    try:
        # warn would skip rows of unknown tables; the fallback must not
        cap = started(menv, {**SKIP, "inconsistent.schema.handling.mode": "warn"})
        assert any("binlog_row_metadata is MINIMAL" in r.getMessage()
                   and "cannot be decoded" in r.getMessage() for r in caplog.records)
        before = offset(menv)
        menv.sql(f"CREATE TABLE lost (id INT PRIMARY KEY, v INT) {MARKER}")
        menv.sql("INSERT INTO lost VALUES (1, 1)")
        cap.thread.join(60)
        with pytest.raises(Exception, match="carries no column names") as info:
            cap.stop()
    finally:
        menv.sql("SET GLOBAL binlog_row_metadata = 'FULL'")
    message = str(info.value)
    assert f"rows of {menv.db}.lost at binlog position {before['file']}:" in message
    assert "never dropped" in message and "CREATE TABLE lost" in message
    assert not list(events(menv.topics, menv.topic("lost")))
    after = offset(menv)
    with menv.conn.cursor() as cur:
        cur.execute("SHOW BINLOG EVENTS IN %s", (before["file"],))
        insert = [r for r in cur.fetchall() if r[2] == "Table_map" and "lost" in str(r[5])]
    assert int(after["pos"]) < int(insert[0][1])  # the row can still be re-read


def test_snapshot_of_a_table_whose_definition_is_unparseable_fails_instead_of_skipping(
        menv: MariaEnv) -> None:
    # SHOW CREATE TABLE carries the table comment, hence the marker; the snapshot has no
    # binlog table metadata to fall back on, so skipping the statement must not skip the rows.
    menv.sql(f"CREATE TABLE hidden (id INT PRIMARY KEY) COMMENT '{MARKER}'")
    menv.sql("INSERT INTO hidden VALUES (1)")
    cap = menv.capture(SKIP)
    cap.thread.join(60)
    with pytest.raises(Exception, match=f"snapshot of {menv.db}.hidden: its SHOW CREATE"):
        cap.stop()
    assert not list(events(menv.topics, menv.topic("hidden")))
