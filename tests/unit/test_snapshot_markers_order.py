"""Every snapshot marker Debezium 3.x writes orders a read below the stream's changes.

A snapshot read taken for a stream event would rank above a later update of the same key at
the same position, and the pipeline would keep the older snapshot value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from headwater.connectors.mysql.ordering import MYSQL_ORDER
from headwater.connectors.postgres.ordering import POSTGRES_ORDER
from headwater.connectors.registry import EventOrder
from headwater.model.record import SnapshotMarker

READS = [m.value for m in SnapshotMarker if m is not SnapshotMarker.FALSE]


def pg_source(snapshot: str) -> dict[str, Any]:
    return {"connector": "postgresql", "snapshot": snapshot, "lsn": 500,
            "sequence": '["500","500"]'}


def mysql_source(snapshot: str) -> dict[str, Any]:
    return {"connector": "mariadb", "snapshot": snapshot, "file": "bin.000002", "pos": 400,
            "row": 0}


@pytest.mark.parametrize("marker", READS)
@pytest.mark.parametrize(("order", "source"), [(POSTGRES_ORDER, pg_source),
                                               (MYSQL_ORDER, mysql_source)])
def test_snapshot_reads_rank_below_stream_events_at_the_same_position(
    marker: str, order: EventOrder, source: Callable[[str], dict[str, Any]]
) -> None:
    read = order.sequence(source(marker), None, 7)
    change = order.sequence(source("false"), None, 3)
    assert read < change
    columnar = order.columnar
    assert columnar is not None
    rows = [source(marker), source("false")]
    table = pa.array(rows)
    built = columnar(table, pa.array([None, None], pa.int64()),
                     np.array([7, 3], dtype=np.int64)).to_pylist()
    assert built == [read, change]  # the column-wise builder agrees with the event path
