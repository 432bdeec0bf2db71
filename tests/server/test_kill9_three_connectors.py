"""The must-show: three connectors in one service (two PostgreSQL databases, one MariaDB)
under an insert/update load; kill -9 the service; restart it: all three resume from their
offsets, and replaying each topic gives back each source table."""

from __future__ import annotations

import functools
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.ops.status import pid_alive
from headwater.testing.localmariadb import LocalMariaDB
from headwater.testing.localpg import LocalPostgres
from headwater.testing.replay import replay
from headwater.testing.timeouts import scaled

from .conftest import Served, wait_state

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def pg() -> Iterator[LocalPostgres]:
    server = LocalPostgres().start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture(scope="module")
def maria() -> Iterator[LocalMariaDB]:
    server = LocalMariaDB().start()
    try:
        yield server
    finally:
        server.cleanup()


class Load(threading.Thread):
    """Inserts and updates in small transactions until stopped; survives nothing but its
    own database going away."""

    def __init__(self, connect: Callable[[], Any], param: str) -> None:
        super().__init__(daemon=True)
        self.connect, self.p = connect, param
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.n = 0

    def run(self) -> None:
        try:
            conn = self.connect()
            cur = conn.cursor()
            while not self.stop.is_set():
                self.n += 1
                cur.execute(f"INSERT INTO t VALUES ({self.p}, {self.p}, {self.p})",
                            (self.n, 0, f"row {self.n}"))
                if self.n % 3 == 0:
                    cur.execute(f"UPDATE t SET v = v + 1 WHERE id = {self.p}",
                                (self.n // 2,))
                if self.n % 7 == 0:
                    cur.execute(f"DELETE FROM t WHERE id = {self.p}", (self.n - 5,))
                conn.commit()
                time.sleep(0.002)
            conn.close()
        except BaseException as exc:
            self.error = exc


def source_rows(conn: Any) -> dict[int, tuple[int, str]]:
    cur = conn.cursor()
    cur.execute("SELECT id, v, s FROM t")
    return {int(r[0]): (int(r[1]), str(r[2])) for r in cur.fetchall()}


def replayed(topics: Path, topic: str) -> dict[int, tuple[int, str]]:
    try:
        table = replay(topics, topic)
    except FileNotFoundError:
        return {}
    return {int(row["id"]): (int(row["v"]), str(row["s"])) for row in table.values()}


def test_three_connectors_survive_kill9_of_the_service(
        pg: LocalPostgres, maria: LocalMariaDB, tmp_path: Path) -> None:
    ddl = "CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(40))"
    configs: dict[str, dict[str, Any]] = {}
    connects: dict[str, Callable[[], Any]] = {}
    for i in (1, 2):
        db = f"srv_pg{i}"
        pg.create_database(db)
        pg.psql(ddl, dbname=db)
        configs[f"pg{i}"] = {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": "127.0.0.1", "database.port": pg.port,
            "database.user": pg.user, "database.password": "unused", "database.dbname": db,
            "topic.prefix": f"pg{i}", "plugin.name": "pgoutput", "slot.name": f"srv_slot{i}",
            "publication.name": f"srv_pub{i}", "poll.interval.ms": 100,
            "headwater.topics.segment.ms": 200}
        connects[f"pg{i}"] = functools.partial(pg.connect, db, autocommit=False)
    maria.create_database("srv_m")
    mconn = maria.connect("srv_m")
    mconn.cursor().execute(ddl)
    mconn.close()
    configs["maria"] = {
        "connector.class": "io.debezium.connector.mysql.MySqlConnector",
        "database.hostname": "127.0.0.1", "database.port": maria.port,
        "database.user": maria.user, "database.password": maria.password,
        "database.server.id": 5901, "database.include.list": "srv_m",
        "topic.prefix": "maria", "poll.interval.ms": 100, "headwater.topics.segment.ms": 200}
    connects["maria"] = lambda: maria.connect("srv_m", autocommit=False)
    topics = {"pg1": "pg1.public.t", "pg2": "pg2.public.t", "maria": "maria.srv_m.t"}

    served = Served(tmp_path / "data").start()
    loads: list[Load] = []
    try:
        with served.client() as c:
            for name, cfg in configs.items():
                r = c.post("/connectors", json={"name": name, "config": cfg})
                assert r.status_code == 201, r.text
            for name in configs:
                wait_state(c, name, "RUNNING", 180)
        loads = [Load(connects[n], "%s") for n in configs]
        for load in loads:
            load.start()
        time.sleep(4)
        catalog = sqlite3.connect(served.data_dir / "catalog.sqlite")
        pids = [p for (p,) in catalog.execute("SELECT pid FROM connectors") if p]
        catalog.close()
        assert len(pids) == 3
        served.kill9()  # the workers die with it (PR_SET_PDEATHSIG)
        deadline = time.monotonic() + scaled(30)
        while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(pid_alive(p) for p in pids), "workers outlived the service"
        time.sleep(2)  # the load goes on while the service is down
        served.start()
        with served.client() as c:
            for name in configs:
                wait_state(c, name, "RUNNING", 180)
        time.sleep(3)
        for load in loads:
            load.stop.set()
            load.join(30)
            assert load.error is None, load.error
        assert all(load.n > 50 for load in loads)
        for name, load in zip(configs, loads, strict=True):
            conn = connects[name]()
            want = source_rows(conn)
            conn.close()
            root = served.data_dir / "connectors" / name / "topics"
            deadline = time.monotonic() + scaled(180)
            got = replayed(root, topics[name])
            while got != want and time.monotonic() < deadline:
                time.sleep(1)
                got = replayed(root, topics[name])
            assert got == want, f"{name}: {len(got)} replayed rows vs {len(want)} in the source"
            assert load.n > 0
        with served.client() as c:
            assert c.get("/connectors/pg1/topics").json()["pg1"]["topics"] == ["pg1.public.t"]
            offsets = c.get("/connectors/maria/offsets").json()["offsets"]
            assert offsets and offsets[0]["partition"] == {"server": "maria"}
    finally:
        for load in loads:
            load.stop.set()
        served.close()
    assert "stopped" in served.log.read_text()
