"""MariaDB's compressed binlog (`log_bin_compress=ON`): row events and DDL statements written
as compressed events (`Write_rows_compressed_v1`, `Query_compressed`, ...) are captured as
their uncompressed forms are.  The streaming loop once dispatched on the uncompressed event
codes only, so every compressed row event and DDL statement was dropped without a word."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater.testing.localmariadb import LocalMariaDB

from .conftest import MariaEnv, wait_for
from .test_mysql_connector import count, replayed, source_rows, values

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def compressing() -> Iterator[LocalMariaDB]:
    # (log_bin_compress_min_len's floor is 10 bytes: every event here is compressed)
    server = LocalMariaDB(settings={"log_bin_compress": "ON",
                                    "log_bin_compress_min_len": "10"}).start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture()
def cenv(compressing: LocalMariaDB, tmp_path: Path) -> Iterator[MariaEnv]:
    e = MariaEnv(compressing, tmp_path)
    try:
        yield e
    finally:
        e.close()


def caught_up(env: MariaEnv) -> bool:
    """The replay equals the table: rows written before the ALTER have no `tag` in their
    events (adding a column with a default writes no row event), the others have it."""
    got, want = replayed(env, "notes"), source_rows(env, "notes")
    return (set(got) == set(want) and got[50].get("tag") == "tagged"
            and got[2].get("tag") == "late"
            and all(row == {c: want[k][c] for c in row} for k, row in got.items()))


def test_compressed_row_events_and_ddl_are_captured(cenv: MariaEnv) -> None:
    cenv.sql("CREATE TABLE notes (id INT PRIMARY KEY, body VARCHAR(400), n INT)")
    cenv.sql("INSERT INTO notes VALUES (1, 'snapshot row of some length', 1)")
    cap = cenv.capture()
    try:
        wait_for(lambda: count(cenv, "notes") >= 1, what="snapshot")
        for i in range(2, 42):
            cenv.sql("INSERT INTO notes VALUES (%s, %s, %s)", (i, "x" * (i * 7), i))
        cenv.sql("UPDATE notes SET body = CONCAT(body, ' updated'), n = n + 100 WHERE id < 12")
        cenv.sql("DELETE FROM notes WHERE id BETWEEN 30 AND 34")
        cenv.sql("ALTER TABLE notes ADD COLUMN tag VARCHAR(20) NOT NULL DEFAULT 'none'")
        cenv.sql("INSERT INTO notes VALUES (50, 'after the alter', 50, 'tagged')")
        cenv.sql("UPDATE notes SET tag = 'late' WHERE id = 2")
        events_seen = {row[2] for (log, *_rest) in cenv.sql("SHOW BINARY LOGS")
                       for row in cenv.sql(f"SHOW BINLOG EVENTS IN '{log}'")}
        # the server did compress them: otherwise this test proves nothing
        assert {"Write_rows_compressed_v1", "Update_rows_compressed_v1",
                "Delete_rows_compressed_v1", "Query_compressed"} <= events_seen, events_seen
        wait_for(lambda: caught_up(cenv), what="the topic's replay equal to the table",
                 timeout=60)
    finally:
        cap.stop()
    changes = [v for v in values(cenv, "notes") if v is not None]  # (not the tombstones)
    ops = [v["op"] for v in changes]
    # 1 read, 40 + 1 inserts, 11 + 1 updates, 5 deletes
    assert (ops.count("r"), ops.count("c"), ops.count("u"), ops.count("d")) == (1, 41, 12, 5)
    assert changes[-1]["after"]["tag"] == "late"
