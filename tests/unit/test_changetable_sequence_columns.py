"""The column-wise sequence builders of SQL Server and Db2 against their row-wise
`sequence_key`, string for string, on random positions: snapshot reads (no change LSN, no
serial number), nulls, every snapshot marker, the LSN widths each database writes and the
limits of every part; and the shapes a builder leaves to the event path (`NotColumnar`)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from headwater.connectors.db2 import ordering as db2
from headwater.connectors.db2.ordering import DB2_ORDER
from headwater.connectors.registry import EventOrder
from headwater.connectors.sequence_columns import NotColumnar
from headwater.connectors.sqlserver import ordering as sqlserver
from headwater.connectors.sqlserver.ordering import SQLSERVER_ORDER
from headwater.model.record import SnapshotMarker
from headwater.pipeline.columnar import source_struct

MARKERS = [m.value for m in SnapshotMarker]
STREAM = [SnapshotMarker.FALSE.value, None]


def lsn(rng: random.Random, nbytes: int) -> str:
    """Debezium's Lsn.toString: lower-case hex, a colon after bytes 4 and 8."""
    raw = rng.choice([bytes(nbytes), b"\xff" * nbytes, rng.randbytes(nbytes),
                      bytes(nbytes - 2) + rng.randbytes(2)]).hex()
    return ":".join(p for p in (raw[:8], raw[8:16], raw[16:]) if p)


def sqlserver_source(rng: random.Random) -> dict[str, Any]:
    snapshot = rng.choice(MARKERS + STREAM)
    stream = snapshot in STREAM
    return {"connector": "sqlserver", "db": "testDB", "schema": "dbo", "table": "t",
            "snapshot": snapshot, "sequence": None,
            "commit_lsn": None if rng.random() < 0.05 else lsn(rng, 10),
            "change_lsn": lsn(rng, 10) if stream and rng.random() < 0.95 else None,
            "event_serial_no": rng.choice([1, 2, 0, (1 << 32) - 1, None]) if stream else None}


def db2_source(rng: random.Random) -> dict[str, Any]:
    snapshot = rng.choice(MARKERS + STREAM)
    stream = snapshot in STREAM
    width = rng.choice((10, 16))  # the CD tables' width here, and Debezium's test setup's

    def text() -> str:
        return rng.choice([lsn(rng, width), lsn(rng, width),
                           rng.randbytes(rng.randrange(1, 16)).hex(), ""])

    return {"connector": "db2", "db": "TESTDB", "schema": "DB2INST1", "table": "T",
            "snapshot": snapshot, "sequence": None,
            "commit_lsn": None if rng.random() < 0.05 else text(),
            "change_lsn": text() if stream and rng.random() < 0.95 else None}


def both(order: EventOrder, sources: list[dict[str, Any]],
         offsets: list[int]) -> tuple[list[str], list[str]]:
    """(column-wise, row-wise) sequences; the batch's source as the column-wise reader parses
    it (the common fields and the order's declared position fields)."""
    rng = random.Random(len(sources))
    total_order = [rng.choice([None, 0, 1, 7]) for _ in sources]
    assert order.columnar is not None
    struct = pa.array(sources, source_struct(order.columnar_position))
    got = order.columnar(struct, pa.array(total_order, pa.int64()),
                         np.array(offsets, dtype=np.int64)).to_pylist()
    want = [order.sequence(s, t, o) for s, t, o in zip(sources, total_order, offsets,
                                                       strict=True)]
    return got, want


LSN_DIGITS = {"sqlserver": sqlserver.LSN_DIGITS, "db2": db2.LSN_DIGITS}
ORDERS = {"sqlserver": (SQLSERVER_ORDER, sqlserver_source), "db2": (DB2_ORDER, db2_source)}


@pytest.mark.parametrize("name", list(ORDERS))
@pytest.mark.parametrize("seed", range(5))
def test_column_wise_sequences_equal_the_row_wise_key(name: str, seed: int) -> None:
    order, make = ORDERS[name]
    rng = random.Random(seed)
    n = (1, 7, 500, 500, 2000)[seed]
    sources = [make(rng) for _ in range(n)]
    offsets = [rng.choice([0, (1 << 63) - 1, rng.randrange(1 << 40)]) for _ in range(n)]
    got, want = both(order, sources, offsets)
    assert got == want
    assert len({len(s) for s in got}) == 1  # fixed width: lexical order is the change order
    if n >= 500:  # snapshot reads and stream events, and nulls of every position field, drawn
        digits = LSN_DIGITS[name]
        assert {s[digits] for s in got} == {"0", "1"}
        for field in ("commit_lsn", "change_lsn"):
            assert {s[field] is None for s in sources} == {True, False}


@pytest.mark.parametrize("name", list(ORDERS))
def test_an_empty_batch_has_no_sequences(name: str) -> None:
    order, _ = ORDERS[name]
    assert both(order, [], []) == ([], [])


def test_snapshot_reads_rank_below_the_stream_at_their_lsn() -> None:
    read = {"connector": "sqlserver", "snapshot": "last", "commit_lsn": "00000027:00000758:0003",
            "change_lsn": None, "event_serial_no": None}
    change = {**read, "snapshot": "false", "change_lsn": "00000027:00000750:0001",
              "event_serial_no": 2}
    got, want = both(SQLSERVER_ORDER, [change, read], [1, 2])
    assert got == want and got[1] < got[0]
    assert got[1] == "00000027000007580003" + "0" + "0" * 20 + "0" * 8 + f"{2:016x}"


@pytest.mark.parametrize(("name", "field", "value"), [
    ("sqlserver", "commit_lsn", "00000027:00000758:003"),  # 19 digits: not fixed width
    ("sqlserver", "change_lsn", ""),
    ("sqlserver", "change_lsn", "00000027:00000758:0003:00"),
    ("sqlserver", "commit_lsn", "00000027:00000758:00é"),  # 20 characters, 21 bytes
    ("sqlserver", "event_serial_no", 1 << 32),
    ("sqlserver", "event_serial_no", -1),
    ("db2", "commit_lsn", "00000000:00000000:00000000000000000a"),  # 34 digits
    ("db2", "change_lsn", "é" * 3),
])
def test_positions_outside_the_builders_shape_are_left_to_the_event_path(
        name: str, field: str, value: Any) -> None:
    order, make = ORDERS[name]
    rng = random.Random(1)
    sources = [make(rng) for _ in range(20)]
    sources[7] = {**sources[7], "snapshot": "false", field: value}
    with pytest.raises(NotColumnar):
        both(order, sources, list(range(20)))
