"""Helpers of the Datastream stream tests against MariaDB through the CLI
(test_stream_gtid_position, test_stream_backfill_jobs): the connection and output profiles
and a run of statements on the test's own connection."""

from __future__ import annotations

from typing import Any

from tests.integration.postgres.test_streams import Cli

from .conftest import MariaEnv


def create_profiles(cli: Cli, menv: MariaEnv) -> None:
    """The source profile `maria` (this test's server) and the output profile `out` (topics
    under the test's directory)."""
    s = menv.server
    cli("profiles", "create", "maria", "--kind", "mariadb", "-p", "database.hostname=127.0.0.1",
        "-p", f"database.port={s.port}", "-p", f"database.user={s.user}",
        "-p", f"database.password={s.password}")
    cli("profiles", "create", "out", "--kind", "topics", "--dir", str(menv.tmp / "topics"))


def run_sql(menv: MariaEnv, *statements: str) -> Any:
    """Run the statements in order on the test's connection; the last one's rows."""
    with menv.conn.cursor() as cur:
        for st in statements:
            cur.execute(st)
        return cur.fetchall()
