"""A snapshot read's `ts_ms` is the time its server batch was asked for, not the time the
connector got round to it (connectors/mongodb/snapshot.py): the pipeline ranks reads among
stream events by `ts_ms`, and a stamp later than the server's read put stale documents (and
deleted ones) above the changes that followed them (found by the fault harness)."""

from __future__ import annotations

from collections.abc import Iterator

from headwater.connectors.mongodb.ordering import mongodb_sequence_key
from headwater.connectors.mongodb.snapshot import batch_read_times


class FakeCursor:
    """Batches of documents; each batch 'fetched' (retrieved grows) on the next() that needs
    it; the clock moves 1 s per document handed out, as a slow consumer would."""

    def __init__(self, batches: list[list[int]], clock: list[float]) -> None:
        self.batches = batches
        self.retrieved = 0
        self.clock = clock

    def __iter__(self) -> Iterator[int]:
        for batch in self.batches:
            self.retrieved += len(batch)  # the server read these now
            for doc in batch:
                yield doc
                self.clock[0] += 1.0


def test_every_document_carries_its_batch_request_time() -> None:
    clock = [1000.0]
    cursor = FakeCursor([[1, 2, 3], [4, 5]], clock)
    stamped = list(batch_read_times(cursor, lambda: cursor.retrieved, lambda: clock[0]))
    assert stamped == [(1, 1_000_000), (2, 1_000_000), (3, 1_000_000),
                       (4, 1_002_000), (5, 1_002_000)]


def test_a_change_made_while_a_batch_is_consumed_ranks_after_its_reads() -> None:
    clock = [1000.0]
    cursor = FakeCursor([[1, 2, 3]], clock)
    stamped = list(batch_read_times(cursor, lambda: cursor.retrieved, lambda: clock[0]))
    # document 3 was deleted at t=1001.5 s, after the server read the batch (t=1000 s) and
    # before the connector reached it (t=1002 s)
    delete = {"connector": "mongodb", "snapshot": "false", "ts_ms": 1_001_500, "ord": 1}
    read = {"connector": "mongodb", "snapshot": "true", "ts_ms": stamped[2][1], "ord": -1}
    assert mongodb_sequence_key(read, None, 10) < mongodb_sequence_key(delete, None, 20)
