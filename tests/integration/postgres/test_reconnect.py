"""The server restarts under load: the connector reconnects with backoff and loses nothing."""

from __future__ import annotations

import threading
import time

import psycopg2
import pytest

from headwater.testing.replay import replay

from .conftest import Env, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]


class Writer(threading.Thread):
    """Inserts and updates rows, reconnecting when the server goes away."""

    def __init__(self, env: Env) -> None:
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
                    conn = self.env.pg.connect(self.env.db)
                i += 1
                with conn.cursor() as cur:
                    cur.execute("INSERT INTO t VALUES (%s, 0) ON CONFLICT (id) DO UPDATE "
                                "SET n = t.n + 1", (i % 500,))
                self.commits += 1
            except psycopg2.Error:
                conn = None
                time.sleep(0.1)
            time.sleep(0.001)


def test_server_restart_under_load_reconnects_and_loses_nothing(env: Env) -> None:
    env.sql("CREATE TABLE t (id int PRIMARY KEY, n int NOT NULL)")
    writer = Writer(env)
    cap = env.capture({"retriable.restart.connector.wait.ms": 200})
    try:
        wait_for(lambda: cap.runtime.metrics.connected, what="streaming")
        writer.start()
        wait_for(lambda: writer.commits > 300, what="load")
        env.conn.close()
        env.pg.restart()
        env.conn = env.pg.connect(env.db)
        before = writer.commits
        wait_for(lambda: writer.commits > before + 300, timeout=60, what="load after restart")
        wait_for(lambda: cap.runtime.metrics.connected and cap.thread.is_alive(), timeout=60,
                 what="capture reconnected")
        writer.stop.set()
        writer.join(10)
        source = {r[0]: r[1] for r in env.sql("SELECT id, n FROM t")}

        def caught_up() -> bool:
            table = replay(env.topics, f"{env.prefix}.public.t")
            return {k[0][1]: row["n"] for k, row in table.items()} == source

        wait_for(caught_up, timeout=60, interval=0.5, what="topics equal the source table")
    finally:
        writer.stop.set()
        cap.stop()
    assert cap.error is None
