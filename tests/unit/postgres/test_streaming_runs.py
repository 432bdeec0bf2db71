"""Runs of row messages (streaming.py, `_Loop._flush_run`): consecutive Inserts, Updates
without an old tuple or Deletes of one table are converted column by column and dispatched in
one pass.  What comes out - events, positions, transaction blocks, batches with their offsets
and acks, the converting failure modes - is what row by row dispatch makes of them."""

from __future__ import annotations

import functools
import struct
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.postgres import streaming
from headwater.engine.dispatcher import DispatchOptions, EventProcessingError
from tests.unit.postgres import test_streaming_v2_loop as loop
from tests.unit.postgres.test_streaming_v2_loop import (
    IDLE,
    T,
    X,
    begin,
    commit,
    delete,
    insert,
    relation,
    run,
    truncate,
    update,
)

U = 43  # a second table's relation oid


def key_change(old: str, new: str, v: str) -> bytes:
    """An Update whose key changed: the old key tuple ('K') and the new row."""
    return (b"U" + struct.pack("!I", T) + b"K" + loop._tup(old, None) + b"N"
            + loop._tup(new, v))


def on(oid: int, message: bytes) -> bytes:
    """A row message of table t rewritten for relation `oid`."""
    return message[:1] + struct.pack("!I", oid) + message[5:]


def script() -> list[Any]:
    """Runs broken every way: by kind, by table, by a key change, a truncate, a relation,
    an idle read, a commit; transactions of 1 to 7 rows."""
    out: list[Any] = [(begin(5000, X), 100), (relation(), 101), (relation(oid=U), 102)]
    lsn = 110
    for i in range(7):
        out.append((insert(str(i), f"v{i}"), lsn := lsn + 1))
    out += [(update("1", "a"), lsn + 1), (update("2", "b"), lsn + 2),
            (on(U, insert("1", "u1")), lsn + 3), (on(U, insert("2", "u2")), lsn + 4),
            (insert("7", "v7"), lsn + 5), IDLE, (insert("8", "v8"), lsn + 6),
            (key_change("3", "30", "c"), lsn + 7), (update("4", "d"), lsn + 8),
            (delete("5"), lsn + 9), (delete("6"), lsn + 10), (on(U, delete("1")), lsn + 11),
            (truncate(), lsn + 12), (insert("9", "v9"), lsn + 13),
            (relation(("id", "v", "w")), lsn + 14), (insert("10", "v10", "w"), lsn + 15),
            (commit(5000, 5100), 5100),
            (begin(6000, X + 1), 5200), (update("9", "e", "f"), 5201), (commit(6000, 6100), 6100)]
    return out


def outcome(r: loop.Run) -> tuple[Any, ...]:
    return (r.changes, [(b.offset, b.ack, len(b.records)) for b in r.batches],
            r.source.metrics.events_filtered)


@pytest.mark.parametrize(("metadata", "skipped", "max_batch"), [
    (False, frozenset(), 100), (False, frozenset(), 3), (True, frozenset(), 4),
    (False, frozenset({"c"}), 5), (False, frozenset({"u", "d"}), 2)])
def test_runs_come_out_as_row_by_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, metadata: bool, skipped: frozenset[str],
    max_batch: int,
) -> None:
    kw: dict[str, Any] = {"metadata": metadata, "skipped": skipped, "max_batch": max_batch,
          "server_version": 130000}
    runs = run(script(), tmp_path / "runs", **kw)
    monkeypatch.setattr(streaming._Loop, "_start_run", lambda *_: False)  # row by row
    rows = run(script(), tmp_path / "rows", **kw)
    assert len(rows.changes) >= 8
    assert outcome(runs) == outcome(rows)


@pytest.mark.parametrize("mode", ["warn", "skip"])
def test_a_value_that_does_not_convert_in_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The run falls back to row by row: the bad value is null, the rest as converted."""
    bad = [(begin(5000, X), 100), (relation(), 101), (insert("1", "a"), 111),
           (insert("x", "b"), 112), (insert("3", "c"), 113), (commit(5000, 5100), 5100)]
    monkeypatch.setattr(loop, "DispatchOptions",
                        functools.partial(DispatchOptions, converting_failure_mode=mode))
    runs = run(bad, tmp_path / "runs", server_version=130000)
    assert [r.after for r in runs.records] == [(1, "a"), (None, "b"), (3, "c")]
    assert runs.source.metrics.erroneous_events == 1


def test_a_value_that_does_not_convert_in_a_run_fails_at_its_position(tmp_path: Path) -> None:
    bad = [(begin(5000, X), 100), (relation(), 101), (insert("1", "a"), 111),
           (insert("x", "b"), 0x1234), (insert("3", "c"), 113), (commit(5000, 5100), 5100)]
    with pytest.raises(EventProcessingError, match=r"LSN 0/1234 .*column id"):
        run(bad, tmp_path, server_version=130000)
