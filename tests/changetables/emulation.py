"""What the SQL Server and Db2 tests share: a throwaway PostgreSQL holding an emulation, a
fresh emulated database per test, and a capture of a change-table connector run in-process
(snapshot, then streaming in a thread) whose batches the test reads."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext
from headwater.model.record import ChangeRecord, TransactionEvent
from headwater.relational.changetables.connector import ChangeTableConnector
from headwater.testing.localpg import LocalPostgres, local_postgres


@pytest.fixture(scope="module")
def emulated_pg() -> Iterator[LocalPostgres]:
    with local_postgres() as pg:
        yield pg


def fresh_database(pg: LocalPostgres, request: Any, install: Callable[[Any], None]) -> str:
    """A new database named after the test, with the emulation `install` creates in it."""
    name = "testdb_" + str(abs(hash(request.node.name)) % 10**8)
    pg.create_database(name)
    raw = pg.connect(name)
    try:
        install(raw)
    finally:
        raw.close()
    return name


class Capture:
    """A connector's snapshot (in the caller's thread) then its streaming (in a thread)."""

    def __init__(self, connector: ChangeTableConnector) -> None:
        self.batches: list[Batch] = []
        self.stopping = threading.Event()
        self.ctx = SourceRunContext(self.batches.append, self.stopping)
        self.connector = connector
        self.thread: threading.Thread | None = None

    def run(self, offset: dict[str, Any] | None = None) -> None:
        plan = self.connector.start(offset)
        if plan.snapshot is not None:
            offset = plan.snapshot.execute(self.ctx)
        assert plan.streaming is not None
        self.thread = threading.Thread(target=plan.streaming.execute, args=(self.ctx, offset))
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        assert self.thread is not None
        self.thread.join(10)

    def records(self) -> list[ChangeRecord]:
        return [e for b in list(self.batches) for e in b.records if isinstance(e, ChangeRecord)]

    def transaction_events(self) -> list[TransactionEvent]:
        return [e for b in list(self.batches) for e in b.records
                if isinstance(e, TransactionEvent)]

    def last_offset(self) -> dict[str, Any] | None:
        return next((b.offset for b in reversed(self.batches) if b.offset), None)


def check_insert_update_delete(capture: Capture, records: list[ChangeRecord]) -> None:
    """The three streamed changes of one customer (1005 john doe inserted, its email changed,
    deleted), each its own transaction with metadata: before and after images, Debezium's
    serial numbers (an update is 2), commit LSNs in order with each change LSN below its
    commit LSN, and the commit LSN as the transaction id."""
    create, update, delete = records
    assert create.after == (1005, "john", "doe", "john.doe@example.org", None, None)
    assert update.before is not None and update.before[3] == "john.doe@example.org"
    assert update.after is not None and update.after[3] == "noreply@example.org"
    assert delete.before is not None and delete.before[3] == "noreply@example.org"
    assert [r.position.event_serial_no for r in records] == [1, 2, 1]
    commits = [r.position.commit_lsn for r in records]
    assert commits == sorted(commits) and len(set(commits)) == 3
    for record in records:
        assert record.position.change_lsn < record.position.commit_lsn
    tx_events = capture.transaction_events()
    assert [e.status for e in tx_events] == ["BEGIN", "END"] * 3
    assert tx_events[0].id == create.position.commit_lsn
