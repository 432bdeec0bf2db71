"""What the connector asks a MySQL server and a MariaDB server differently, in one place: the
server is a `MySqlServer` or its subclass `MariaDbServer` (as sqlglot's dialects: the
differences are overrides and data), told apart by `SELECT VERSION()`.

Why a class, not an `is_mariadb` flag at each use: the snapshot's binlog position, the
incremental snapshot's watermarks and the binlog status statement each differ, and a flag
spreads that across the connector.  What MariaDB does differently:

* `SHOW MASTER STATUS` stays (MySQL renamed it `SHOW BINARY LOG STATUS` in 8.2, removed the
  old name in 8.4); its row has no GTID set;
* a consistent snapshot reports its own binlog position (`binlog_snapshot_file/position`),
  exact even without a lock; MySQL's is where the binlog ends, exact only under the lock;
* GTIDs are a position, the last `domain-server-seq` per domain (``@@gtid_binlog_pos``), not
  MySQL's executed set (the status row's fifth column).
"""

from __future__ import annotations

from typing import Any, ClassVar


class MySqlServer:
    """A MySQL server (5.7, 8.x)."""

    mariadb: ClassVar[bool] = False

    def __init__(self, version: str) -> None:
        self.version = version

    @property
    def binlog_status_statement(self) -> str:
        """`SHOW BINARY LOG STATUS` from MySQL 8.2 (the old name is gone in 8.4)."""
        parts = self.version.lower().split("-", 1)[0].split(".")
        try:
            major, minor = int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
        except ValueError:
            return "SHOW MASTER STATUS"
        return "SHOW BINARY LOG STATUS" if (major, minor) >= (8, 2) else "SHOW MASTER STATUS"

    def binlog_end(self, cur: Any) -> Any:
        """The binlog status row (file, position, ..., MySQL's GTID set): where the binlog
        ends now; None on a server without a binary log."""
        cur.execute(self.binlog_status_statement)
        return cur.fetchone()

    def snapshot_point(self, cur: Any) -> tuple[str, int] | None:
        """The binlog (file, position) the consistent snapshot `cur`'s transaction started
        matches, if the server reports it (MySQL does not)."""
        return None

    def gtid_position(self, cur: Any) -> str | None:
        """MariaDB's ``@@gtid_binlog_pos`` (None: not MariaDB)."""
        return None

    def consistent_point(self, cur: Any, locked: bool) -> tuple[str, int, str | None]:
        """The binlog position and GTIDs of the consistent snapshot `cur`'s transaction just
        started: where the binlog ends, with its executed GTID set (exact under the lock)."""
        file, pos, row = self._end(cur)
        gtids = str(row[4]).replace("\n", "") if len(row) >= 5 and row[4] else None
        return file, pos, gtids

    def _end(self, cur: Any) -> tuple[str, int, Any]:
        row = self.binlog_end(cur)
        if row is None:
            raise RuntimeError("the server has no binary log: start it with log_bin (and "
                               "binlog_format=ROW, binlog_row_image=FULL)")
        return str(row[0]), int(row[1]), row


class MariaDbServer(MySqlServer):
    """A MariaDB server (10.x, 11.x)."""

    mariadb = True

    @property
    def binlog_status_statement(self) -> str:
        """MariaDB keeps `SHOW MASTER STATUS` (and has `SHOW BINLOG STATUS` since 10.5.2)."""
        return "SHOW MASTER STATUS"

    def snapshot_point(self, cur: Any) -> tuple[str, int] | None:
        """`binlog_snapshot_file/position`: exact even without a lock; None if it names none."""
        cur.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
        status = {str(k).lower(): v for k, v in cur.fetchall()}
        file = status.get("binlog_snapshot_file")
        return (str(file), int(status.get("binlog_snapshot_position") or 0)) if file else None

    def gtid_position(self, cur: Any) -> str:
        cur.execute("SELECT @@gtid_binlog_pos")
        return str(cur.fetchone()[0] or "")

    def consistent_point(self, cur: Any, locked: bool) -> tuple[str, int, str | None]:
        """The snapshot's own binlog position (else where the binlog ends); the GTID position
        only under the lock, the only time it matches the snapshot."""
        point = self.snapshot_point(cur)
        gtids = (self.gtid_position(cur) or None) if locked else None
        if point is None:
            point = self._end(cur)[:2]
        return *point, gtids


def server_for(version: str) -> MySqlServer:
    """The server a `VERSION()` names."""
    return (MariaDbServer if "mariadb" in version.lower() else MySqlServer)(version)


def server_of(conn: Any) -> MySqlServer:
    """The server `conn` is connected to."""
    with conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        return server_for(str(cur.fetchone()[0]))
