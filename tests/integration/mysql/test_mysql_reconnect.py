"""The MariaDB server restarts under load: the connector reconnects with backoff, resumes from
its offsets and loses nothing."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest

from headwater.testing.localmariadb import LocalMariaDB
from headwater.testing.replay import replay

from .conftest import MariaEnv, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture()
def own_env(tmp_path: Path) -> Iterator[MariaEnv]:
    """A server of its own: restarting the session's server would disturb other tests."""
    server = LocalMariaDB().start()
    env = MariaEnv(server, tmp_path)
    try:
        yield env
    finally:
        try:
            env.conn.close()
        finally:
            server.cleanup()


class Writer(threading.Thread):
    """Upserts rows, reconnecting when the server goes away."""

    def __init__(self, env: MariaEnv) -> None:
        super().__init__(daemon=True)
        self.env = env
        self.stop = threading.Event()
        self.commits = 0

    def run(self) -> None:
        conn = None
        i = 0
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = self.env.server.connect(self.env.db)
                i += 1
                with conn.cursor() as cur:
                    cur.execute("INSERT INTO t VALUES (%s, 0) ON DUPLICATE KEY UPDATE n = n + 1",
                                (i % 500,))
                self.commits += 1
            except pymysql.err.Error:
                conn = None
                time.sleep(0.1)
            time.sleep(0.001)


def test_server_restart_under_load_reconnects_and_loses_nothing(own_env: MariaEnv) -> None:
    env = own_env
    env.sql("CREATE TABLE t (id INT PRIMARY KEY, n INT NOT NULL)")
    writer = Writer(env)
    cap = env.capture({"retriable.restart.connector.wait.ms": 200})
    try:
        wait_for(lambda: cap.runtime.metrics.connected, what="streaming")
        writer.start()
        wait_for(lambda: writer.commits > 300, what="load")
        env.conn.close()
        env.server.restart()
        env.conn = env.server.connect(env.db)
        before = writer.commits
        wait_for(lambda: writer.commits > before + 300, timeout=60, what="load after restart")
        wait_for(lambda: cap.runtime.metrics.connected and cap.thread.is_alive(), timeout=60,
                 what="capture reconnected")
        writer.stop.set()
        writer.join(10)
        source = {r[0]: r[1] for r in env.sql("SELECT id, n FROM t")}

        def caught_up() -> bool:
            table = replay(env.topics, env.topic("t"))
            return {k[0][1]: row["n"] for k, row in table.items()} == source

        wait_for(caught_up, timeout=60, interval=0.5, what="topics equal the source table")
    finally:
        writer.stop.set()
        cap.stop()
    assert cap.error is None
