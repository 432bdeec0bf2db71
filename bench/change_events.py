"""Change events for the pipeline benchmarks: one PostgreSQL table's inserts, updates and
deletes rendered as Debezium JSON into a topic log, and the state the source ends with, to check
a target against.

Besides the clean log (every event once, in the source's order) it writes the variants where
a pipeline that takes the newest event per key by its position within a micro-batch and merges
it unconditionally goes wrong:

- `reordered`: some events reach the log late (a retrying producer, a mirrored topic's
  fail-over): 5% of them come up to a third of the run after their place;
- `duplicated`: some events are delivered twice (at-least-once): 10% of them once more, up to a
  third of the run later.  (A connector that restarts and re-sends the tail it had sent before
  is harmless to newest-wins at the end: the tail ends with each key's newest change.  Copies
  that arrive after newer changes of their key are not.);
- `toast`: PostgreSQL's unchanged TOAST values: most updates leave `name` out, which Debezium
  renders as `__debezium_unavailable_value`; the source's row keeps its value.

The positions (LSN, commit LSN, transaction id) are the source's in every variant: only the log
order and the copies differ, so a pipeline ordering by position can recover the source's state.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

from headwater.connectors.postgres.position import PostgresPosition, PostgresSourceBlock
from headwater.convert.decimal import ConnectDecimal, decimal_schema
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.model.record import UNCHANGED_TOAST, ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.model.schema import INT64, STRING, Column, ConnectSchema, TableId, TableSchema
from headwater.topics.log import TopicLog

CTX: Final = SourceContext("postgresql", "bench", "headwater")
TOPIC: Final = "bench.public.items"
VARIANTS: Final = ("clean", "reordered", "duplicated", "toast")
SEGMENT_BYTES: Final = 64 << 20

# key -> the source's final row (id, name, amount as a Connect decimal, qty), None if deleted
State = dict[int, tuple[Any, ...] | None]


def table_schema() -> TableSchema:
    return TableSchema(
        TableId("bench", "public", "items"),
        (
            Column("id", 0, "int8", ConnectSchema(INT64, optional=False), fallback=0),
            Column("name", 1, "text", ConnectSchema(STRING, optional=True)),
            Column("amount", 2, "numeric", decimal_schema(12, 2, True)),
            Column("qty", 3, "int8", ConnectSchema(INT64, optional=True)),
        ),
        ("id",),
    )


def changes(count: int, keys: int, seed: int = 1, toast: bool = False,
            state: State | None = None) -> Iterator[ChangeRecord]:
    """`count` changes in the source's order; `state` (when given) ends as the source's final
    rows.  With `toast`, 80% of the updates leave `name` unsent (it does not change), the others
    set a new one; the main random stream is the same either way, so the keys, operations and
    amounts are those of the clean run."""
    rng = random.Random(seed)
    names = random.Random(seed + 1)
    table = table_schema()
    state = {} if state is None else state
    lsn = 1000
    for i in range(count):
        lsn += 100
        key = rng.randrange(keys)
        current = state.get(key)
        pos = PostgresPosition(lsn, lsn, lsn - 50, i)
        if current is None:
            row = (key, f"item-{key}", ConnectDecimal.of(rng.randrange(10**9), 2), i)
            yield ChangeRecord(CTX, table, Op.CREATE, None, row, 0, 0, SnapshotMarker.FALSE, pos)
            state[key] = row
        elif rng.random() < 0.15:
            yield ChangeRecord(CTX, table, Op.DELETE, current, None, 0, 0, SnapshotMarker.FALSE,
                               pos)
            state[key] = None
        else:
            name = current[1]
            sent: Any = name
            if toast:
                if names.random() < 0.8:
                    sent = UNCHANGED_TOAST
                else:
                    name = sent = f"item-{key}-{i}"
            row = (key, name, ConnectDecimal.of(rng.randrange(10**9), 2), i)
            yield ChangeRecord(CTX, table, Op.UPDATE, None, (*row[:1], sent, *row[2:]), 0, 0,
                               SnapshotMarker.FALSE, pos)
            state[key] = row


def log_order(count: int, variant: str, seed: int = 1) -> list[int]:
    """The indexes of the source's changes in the order the log holds them (see the module
    docstring); every change appears at least once."""
    if variant in ("clean", "toast"):
        return list(range(count))
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}: expected one of {', '.join(VARIANTS)}")
    rng = random.Random(seed + 2)
    share, duplicate = (0.05, False) if variant == "reordered" else (0.10, True)
    reach = max(1, count // 3)
    placed: list[tuple[float, int]] = []
    for i in range(count):
        late = rng.random() < share
        if not late or duplicate:
            placed.append((i, i))
        if late:  # (a fraction: after the change that sits at that place)
            placed.append((i + rng.randint(1, reach) + 0.5, i))
    placed.sort()
    return [i for _, i in placed]


def write(root: Path, count: int, keys: int, variant: str = "clean", seed: int = 1,
          segment_bytes: int = SEGMENT_BYTES) -> State:
    """Writes the variant's log of `count` changes to the topic log at `root` (all segments
    sealed, their modification times in offset order, a second apart, so a file source that
    orders by time reads them in the log's order); returns the source's final state."""
    state: State = {}
    events = changes(count, keys, seed, toast=variant == "toast", state=state)
    if variant in ("clean", "toast"):
        batches = chunks(events)  # streamed: no list of a million records
    else:
        records = list(events)
        batches = chunks(records[i] for i in log_order(count, variant, seed))
    fmt = DebeziumJsonFormat(PostgresSourceBlock())
    with TopicLog(root, segment_bytes=segment_bytes) as log:
        for batch in batches:
            log.append(fmt.render_batch(batch))
    segments = sorted((root / TOPIC).glob("*.jsonl"))
    first = time.time() - len(segments)
    for n, path in enumerate(segments):
        os.utime(path, (first + n, first + n))
    return state


def chunks(records: Iterable[ChangeRecord], size: int = 10_000) -> Iterator[list[ChangeRecord]]:
    batch: list[ChangeRecord] = []
    for record in records:
        batch.append(record)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def expected_rows(state: State) -> dict[int, tuple[str, Decimal, int]]:
    """The source's live rows as a target should hold them: id -> (name, amount, qty)."""
    return {key: (row[1], row[2].value, row[3]) for key, row in state.items() if row is not None}


def differences(want: dict[int, tuple[Any, ...]], got: dict[int, tuple[Any, ...]]) -> str:
    """'' when equal, else how many keys are missing, extra and with other values."""
    missing = want.keys() - got.keys()
    extra = got.keys() - want.keys()
    other = sum(1 for k in want.keys() & got.keys() if want[k] != got[k])
    if not (missing or extra or other):
        return ""
    return (f"{len(missing) + len(extra) + other:,} of {len(want):,} keys differ "
            f"({len(missing):,} missing, {len(extra):,} extra, {other:,} with other values)")
