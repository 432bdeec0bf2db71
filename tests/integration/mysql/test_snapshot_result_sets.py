"""`min.row.count.to.stream.results`: the snapshot reads a table estimated larger than it with
a streaming result set (PyMySQL's SSCursor), a smaller one buffered (Cursor), every table
streamed with 0; the rows are the same either way."""

from __future__ import annotations

from typing import Any

import pymysql.cursors  # type: ignore[import-untyped]
import pytest

from headwater.connectors.mysql.snapshot_workers import streams_results
from headwater.relational.key_ranges import TableSize
from headwater.testing.replay import events

from .conftest import MariaEnv, wait_for


def test_streams_results_follows_the_estimate() -> None:
    assert streams_results(TableSize(1001), 1000)
    assert not streams_results(TableSize(1000), 1000)
    assert streams_results(TableSize(0), 0) and streams_results(TableSize(-1), 0)
    assert not streams_results(TableSize(-1), 1000)  # unknown: buffered, as in Debezium


@pytest.mark.parametrize("min_rows, small, big", [
    (10, "Cursor", "SSCursor"), (0, "SSCursor", "SSCursor"), (1000, "Cursor", "Cursor")])
def test_snapshot_result_set_follows_min_row_count(
        min_rows: int, small: str, big: str, menv: MariaEnv,
        monkeypatch: pytest.MonkeyPatch) -> None:
    menv.sql("CREATE TABLE small (id INT PRIMARY KEY)")
    menv.sql("CREATE TABLE big (id INT PRIMARY KEY)")
    menv.sql("INSERT INTO small VALUES (1), (2), (3)")
    menv.sql("INSERT INTO big SELECT seq FROM seq_1_to_40")
    menv.sql("ANALYZE TABLE small, big")  # TABLE_ROWS exact: the estimate decides
    read_with: dict[str, str] = {}
    execute = pymysql.cursors.Cursor.execute

    def spy(cur: Any, query: str, args: Any = None) -> Any:
        for table in ("small", "big"):
            if query.startswith("SELECT") and query.endswith(f"FROM `{menv.db}`.`{table}`"):
                read_with[table] = type(cur).__name__
        return execute(cur, query, args)

    monkeypatch.setattr(pymysql.cursors.Cursor, "execute", spy)
    cap = menv.capture({"min.row.count.to.stream.results": min_rows,
                        "snapshot.mode": "initial_only"})
    try:
        wait_for(menv.snapshot_completed, what="the snapshot")
    finally:
        cap.stop()
    assert read_with == {"small": small, "big": big}
    for table, rows in (("small", 3), ("big", 40)):
        ids = [v["after"]["id"] for _, _, v in events(menv.topics, menv.topic(table)) if v]
        assert ids == list(range(1, rows + 1))
