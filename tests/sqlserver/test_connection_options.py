"""SQL Server properties that reach the driver: `database.encrypt` and
`database.trustServerCertificate` become pymssql's `encryption` (or a refusal where pymssql
cannot do what they ask), and `streaming.fetch.size` is how many change rows each fetch from
the driver takes (the change-table read against the emulation)."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.config.loader import ConfigError
from headwater.connectors.sqlserver.config import validate_sqlserver_config
from headwater.model.record import Op
from headwater.testing.localpg import free_port, wait_for
from headwater.testing.sqlserver_emulation import dbapi
from tests.sqlserver.conftest import enable_cdc, tsql
from tests.sqlserver.test_emulated_capture import Capture, config

BASE = {"topic.prefix": "s", "database.hostname": "127.0.0.1", "database.user": "u",
        "database.names": "d"}


@pytest.mark.parametrize("encrypt, trust, wanted", [
    ("true", "true", "require"), ("false", "false", "off"), ("false", "true", "off")])
def test_encryption_reaches_pymssql(encrypt: str, trust: str, wanted: str) -> None:
    cfg = validate_sqlserver_config({**BASE, "database.encrypt": encrypt,
                                     "database.trustServerCertificate": trust})[0]
    kwargs = cfg.connect_kwargs("d")
    assert kwargs["encryption"] == wanted
    pymssql = pytest.importorskip("pymssql")
    # pymssql takes the arguments as given (a TypeError or ValueError would be ours): with
    # nothing listening, only the connection itself fails.
    kwargs.update(port=str(free_port()), login_timeout=1)
    with pytest.raises(pymssql.OperationalError):
        pymssql.connect(**kwargs)


def test_a_certificate_pymssql_cannot_validate_is_refused() -> None:
    """Debezium's defaults (encrypt=true, trustServerCertificate=false) ask for a validated
    certificate; pymssql has no way to validate one, so the configuration is refused."""
    for given in ({}, {"database.encrypt": "true", "database.trustServerCertificate": "false"}):
        with pytest.raises(ConfigError) as refused:
            validate_sqlserver_config({**BASE, **given})
        assert len(refused.value.problems) == 1
        assert refused.value.problems[0].startswith(
            "database.trustServerCertificate=false: the driver (pymssql) cannot validate")
    # another driver (the emulation) is not pymssql: not refused on pymssql's account
    validate_sqlserver_config({**BASE, "headwater.sqlserver.driver": dbapi.__name__})


def record_change_fetches(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int]]:
    """(method, size asked, rows returned) of every fetch of a change-table read."""
    seen: list[tuple[str, int, int]] = []
    execute, fetchmany, fetchall = dbapi.Cursor.execute, dbapi.Cursor.fetchmany, \
        dbapi.Cursor.fetchall

    def changes(cur: Any) -> bool:
        return "get_all_changes" in getattr(cur, "hw_statement", "")

    def execute_spy(cur: Any, operation: str, params: Any = None) -> None:
        cur.hw_statement = operation
        execute(cur, operation, params)

    def fetchmany_spy(cur: Any, size: int = 1) -> list[tuple[Any, ...]]:
        rows = fetchmany(cur, size)
        if changes(cur):
            seen.append(("fetchmany", size, len(rows)))
        return rows

    def fetchall_spy(cur: Any) -> list[tuple[Any, ...]]:
        rows = fetchall(cur)
        if changes(cur):
            seen.append(("fetchall", 0, len(rows)))
        return rows

    monkeypatch.setattr(dbapi.Cursor, "execute", execute_spy)
    monkeypatch.setattr(dbapi.Cursor, "fetchmany", fetchmany_spy)
    monkeypatch.setattr(dbapi.Cursor, "fetchall", fetchall_spy)
    return seen


@pytest.mark.parametrize("size", [0, 2])
def test_streaming_fetch_size_is_the_rows_per_fetch(
        size: int, sqlserver_db: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    db = sqlserver_db
    tsql(db, "CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY)", "INSERT INTO dbo.t VALUES (0)")
    enable_cdc(db, "dbo", "t")
    seen = record_change_fetches(monkeypatch)
    capture = Capture(config(db, **{"streaming.fetch.size": str(size)}))
    capture.run()
    try:
        wait_for(lambda: len(capture.records()) >= 1, 20, what="the snapshot")
        tsql(db, "INSERT INTO dbo.t VALUES (1), (2), (3), (4), (5)")
        wait_for(lambda: len(capture.records()) >= 6, 20, what="5 changes")
    finally:
        capture.stop()
    assert [(r.op, (r.after or (None,))[0]) for r in capture.records()] == [
        (Op.READ, 0), *((Op.CREATE, i) for i in range(1, 6))]
    if size == 0:
        assert {method for method, _, _ in seen} == {"fetchall"}
        assert max(rows for _, _, rows in seen) == 5  # the five in one fetch
    else:
        assert {(method, asked) for method, asked, _ in seen} == {("fetchmany", 2)}
        assert [rows for _, _, rows in seen if rows] == [2, 2, 1]  # five rows, two at a time
