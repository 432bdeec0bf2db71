"""The change-table poller's merge: change rows of many change tables into one ordered stream
of typed changes.

Why: SQL Server CDC and Db2 ASN capture both write every change of a captured table as rows
of a *change table* (`cdc.<ci>_CT`, `ASNCDC.CD<table>`), each with the transaction's commit
LSN, an LSN or sequence of the change inside it, and an operation code.  A connector reads the
rows of every table between the last processed LSN and the server's current maximum and must
hand them on in commit order, one table's rows interleaved with another's exactly as they were
committed, with an update's before and after rows joined into one change.  That is the same
for both databases; what differs (the SQL, the operation codes) stays in the connector, which
gives this module rows already normalized to `ChangeRow`.

Restart: Debezium's offsets are (commit LSN, change LSN, event serial number).  Rows before
the stored position were written by an earlier run and are skipped; rows of the stored
position's *transaction* at or before it are yielded with `replay=True`, so the dispatcher can
count them for the transaction metadata (total_order, END counts) without emitting them again.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import Any, Final, NamedTuple

from headwater.model.record import Op

# Normalized operation codes (SQL Server's __$operation values; Db2's are mapped onto them).
DELETE: Final = 1
INSERT: Final = 2
UPDATE_BEFORE: Final = 3
UPDATE_AFTER: Final = 4


class ChangeRow(NamedTuple):
    """One change-table row, normalized."""

    commit: bytes  # commit LSN of the transaction
    change: bytes  # LSN (sequence) of the change inside the transaction
    operation: int  # DELETE, INSERT, UPDATE_BEFORE, UPDATE_AFTER
    values: tuple[Any, ...]  # the captured columns, in the change table's order
    commit_time: Any = None  # the transaction's commit time (datetime), when known


class Change(NamedTuple):
    """One typed change of one table, ready for the dispatcher."""

    table: Any  # the caller's table handle
    op: Op
    before: tuple[Any, ...] | None
    after: tuple[Any, ...] | None
    commit: bytes
    change: bytes
    serial: int  # Debezium's event_serial_no: 2 for a joined update, else 1
    commit_time: Any
    replay: bool = False  # written by an earlier run: count, do not emit


class ChangeTableError(RuntimeError):
    """A change table broke an invariant (an update's before row without its after row)."""


def pair_updates(table: Any, rows: Iterable[ChangeRow]) -> Iterator[Change]:
    """One table's rows (in change order) as changes: an UPDATE_BEFORE row and the
    UPDATE_AFTER row that follows it become one update (event serial number 2)."""
    pending: ChangeRow | None = None
    for row in rows:
        op = row.operation
        if pending is not None:
            if op != UPDATE_AFTER or (row.commit, row.change) != (pending.commit,
                                                                   pending.change):
                raise ChangeTableError(
                    f"table {table}: the update before image at {pending.change.hex()} is not "
                    "followed by its after image")
            yield Change(table, Op.UPDATE, pending.values, row.values, row.commit, row.change,
                         2, row.commit_time or pending.commit_time)
            pending = None
        elif op == UPDATE_BEFORE:
            pending = row
        elif op == INSERT:
            yield Change(table, Op.CREATE, None, row.values, row.commit, row.change, 1,
                         row.commit_time)
        elif op == DELETE:
            yield Change(table, Op.DELETE, row.values, None, row.commit, row.change, 1,
                         row.commit_time)
        elif op == UPDATE_AFTER:  # 'all' row filter, or a before image filtered out
            yield Change(table, Op.UPDATE, None, row.values, row.commit, row.change, 2,
                         row.commit_time)
        else:
            raise ChangeTableError(f"table {table}: unknown operation {op}")
    if pending is not None:
        raise ChangeTableError(f"table {table}: the last update before image at "
                               f"{pending.change.hex()} has no after image")


def merge_changes(tables: Iterable[tuple[Any, Iterable[ChangeRow]]]) -> Iterator[Change]:
    """The changes of every table, in (commit LSN, change LSN, serial) order; ties (which a
    correct server never produces) keep the tables' order."""
    streams = [
        ((c.commit, c.change, c.serial, index, n, c) for n, c in enumerate(pair_updates(t, rows)))
        for index, (t, rows) in enumerate(tables)
    ]
    for *_, change in heapq.merge(*streams):
        yield change


class Resume(NamedTuple):
    """Where the stored offset says the last run stopped."""

    commit: bytes
    change: bytes | None
    serial: int

    def classify(self, change: Change, ordinal: int) -> str:
        """'skip' (before the stored transaction), 'replay' (the stored transaction, written
        already) or 'emit'.  `ordinal` counts changes at the same (commit, change) position,
        from 1, for the serial number comparison (Debezium's eventSerialNoInInitialTx)."""
        if change.commit < self.commit:
            return "skip"
        if change.commit > self.commit or self.change is None:
            return "emit"
        if change.change < self.change:
            return "replay"
        if change.change == self.change and ordinal <= self.serial:
            return "replay"
        return "emit"

    @staticmethod
    def after(change: Change, ordinal: int) -> Resume:
        """Where a restart resumes once `change` (the `ordinal`-th row at its position) is
        written: the serial covers every row written at that position (a split update's
        delete and insert share one serial, 1), as `classify` counts them."""
        return Resume(change.commit, change.change, max(change.serial, ordinal))


def with_ordinals(changes: Iterable[Change]) -> Iterator[tuple[int, Change]]:
    """Each change with its ordinal among the changes at its (commit, change) position, from 1
    (Debezium's eventSerialNoInInitialTx)."""
    last: tuple[bytes, bytes] | None = None
    ordinal = 0
    for change in changes:
        position = (change.commit, change.change)
        ordinal = ordinal + 1 if position == last else 1
        last = position
        yield ordinal, change


def resumed(changes: Iterable[Change], resume: Resume | None) -> Iterator[Change]:
    """`changes` with what an earlier run wrote dropped (earlier transactions) or marked
    `replay` (the interrupted transaction's rows up to the stored position)."""
    if resume is None:
        yield from changes
        return
    for ordinal, change in with_ordinals(changes):
        verdict = resume.classify(change, ordinal)
        if verdict == "skip":
            continue
        yield change._replace(replay=True) if verdict == "replay" else change
