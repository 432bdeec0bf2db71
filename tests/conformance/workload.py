"""Write loads shared by the scenarios: a versioned table `t` and threads that change it.

Every change carries a fresh version (`ver`), and a deleted key is never inserted again, so
each change is identified by (key, op, version) and a delete by its key: what lets a test say
that the topic holds every committed change exactly once.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from .driver import Column, SourceDriver
from .harness import Harness

T_COLUMNS = [Column("id", "int", nullable=False), Column("ver", "bigint", nullable=False),
             Column("pad", "varchar(64)")]

Change = tuple[int, str, int | None]  # key, op, version (None for deletes)


def create_t(driver: SourceDriver, rows: int, table: str = "t") -> None:
    """Table `table` with keys 1..rows at version 0."""
    driver.create_table(table, T_COLUMNS, ["id"])
    q = driver.quote(table)
    for start in range(1, rows + 1, 1000):
        keys = range(start, min(start + 1000, rows + 1))
        driver.execute(f"INSERT INTO {q} VALUES " + ",".join(f"({k}, 0, 'p')" for k in keys))


class Load(threading.Thread):
    """Transactions of 1-10 inserts (new keys), updates and deletes of live keys."""

    def __init__(self, driver: SourceDriver, live: int, seed: int, table: str = "t") -> None:
        super().__init__(daemon=True)
        self.driver, self.table = driver, driver.quote(table)
        self.rng = random.Random(seed)
        self.live = set(range(1, live + 1))
        self.next_key = live + 1
        self.version = 0
        self.stop = threading.Event()
        self.committed: list[Change] = []
        self.transactions = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            conn = self.driver.connect()
            try:
                while not self.stop.is_set():
                    self._transaction(conn)
                    time.sleep(0.002)
            finally:
                conn.close()
        except BaseException as exc:
            self.error = exc

    def _transaction(self, conn: Any) -> None:
        changes: list[Change] = []
        with conn.cursor() as cur:
            for _ in range(self.rng.randint(1, 10)):
                self.version += 1
                ver, r = self.version, self.rng.random()
                if r < 0.3 or not self.live:
                    key, self.next_key = self.next_key, self.next_key + 1
                    cur.execute(f"INSERT INTO {self.table} VALUES (%s, %s, 'n')", (key, ver))
                    self.live.add(key)
                    changes.append((key, "c", ver))
                elif r < 0.85:
                    key = self.rng.choice(tuple(self.live))
                    cur.execute(f"UPDATE {self.table} SET ver = %s WHERE id = %s", (ver, key))
                    changes.append((key, "u", ver))
                else:
                    key = self.rng.choice(tuple(self.live))
                    cur.execute(f"DELETE FROM {self.table} WHERE id = %s", (key,))
                    self.live.discard(key)
                    changes.append((key, "d", None))
        conn.commit()
        self.committed.extend(changes)
        self.transactions += 1

    def finish(self) -> None:
        self.stop.set()
        self.join(30)
        assert self.error is None, repr(self.error)


class Bumper(threading.Thread):
    """Single-statement transactions `ver = ver + 1` over keys 1..keys that ride out a server
    restart: on an error the connection is dropped and made again."""

    def __init__(self, driver: SourceDriver, keys: int, table: str = "t") -> None:
        super().__init__(daemon=True)
        self.driver, self.keys, self.table = driver, keys, driver.quote(table)
        self.stop = threading.Event()
        self.commits = 0
        self.failures = 0

    def run(self) -> None:
        conn: Any = None
        i = 0
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = self.driver.connect()
                i += 1
                with conn.cursor() as cur:
                    cur.execute(f"UPDATE {self.table} SET ver = ver + 1 WHERE id = %s",
                                (i % self.keys + 1,))
                conn.commit()
                self.commits += 1
            except Exception:
                self.failures += 1
                conn = None
                time.sleep(0.1)
            time.sleep(0.001)

    def finish(self) -> None:
        self.stop.set()
        self.join(30)


def streamed(harness: Harness, table: str = "t") -> list[Change]:
    """The topic's streamed changes in order, as (key, op, version); deletes without one."""
    out: list[Change] = []
    for _, key, value in harness.records(table):
        if value is None or value["op"] not in ("c", "u", "d"):
            continue
        ver = value["after"]["ver"] if value["op"] != "d" else None
        out.append((key["id"], value["op"], ver))
    return out


def check_histories(committed: list[Change], harness: Harness, rows: int,
                    redelivery: bool = False, table: str = "t") -> int:
    """Per key, the topic must hold the load's changes with no gap, no duplicate, in commit
    order, and the key's snapshot read before them: after the read (version v), exactly the
    changes committed after the one that wrote v; without a read, the key's whole history (or
    nothing, for a key deleted before the snapshot).  With `redelivery` (a capture was
    killed) a change may repeat, so repeats are dropped first.  Returns how many keys had
    streamed changes."""
    history: dict[int, list[Change]] = {}
    for change in committed:
        history.setdefault(change[0], []).append(change)
    reads: dict[int, int] = {}
    changed: set[int] = set()
    for _, key, value in harness.records(table):
        if value is None:
            continue
        if value["op"] == "r":
            assert redelivery or key["id"] not in reads, f"key {key['id']} read twice"
            assert key["id"] not in changed, f"key {key['id']} read after a streamed change"
            reads[key["id"]] = value["after"]["ver"]
        else:
            changed.add(key["id"])
    got: dict[int, list[Change]] = {}
    for change in streamed(harness, table):
        got.setdefault(change[0], []).append(change)
    overlap = bool(getattr(harness.driver, "snapshot_overlap", False))
    problems: list[tuple[int, int | None, list[Change], list[Change]]] = []
    for key in sorted(set(history) | set(got) | set(reads)):
        want, have = history.get(key, []), got.get(key, [])
        if redelivery:
            have = list(dict.fromkeys(have))
        if key in reads:
            versions = [0 if key <= rows else None] + [c[2] for c in want]
            starts = [i for i, v in enumerate(versions) if v == reads[key]]
            # With `snapshot_overlap` (MongoDB) the stream may repeat changes the read already
            # included: the topic holds a suffix of the history starting at or before the read.
            if not starts or not (have == want[starts[-1]:] or (overlap and any(
                    have == want[i:] for i in range(starts[-1])))):
                problems.append((key, reads[key], want, have))
        elif have != want and not (have == [] and want and want[-1][1] == "d"):
            problems.append((key, None, want, have))
    assert not problems, f"{len(problems)} keys (key, read, committed, topic): {problems[:5]}"
    return len(got)
