"""A changelog holds each source event once, however often capture delivered it.

Capture delivers at least once: after a crash it sends again the events after its last stored
offset, and they reach the topic with new offsets.  SCD1 and SCD2 absorb such a re-delivery
(the same change loses to itself); an append-only changelog would write it again.  So before a
batch is appended, each of its events is matched, by *identity*, against the batch's earlier
events and against the changelog's own rows from the batch's lowest source position on.

The identity is the source position (the sequence without its trailing topic offset: every
connector's sequence ends with it, `connectors.registry.EventOrder`), the op and the key.  The
key is needed because snapshot reads share one position.  A table without a key has no way to
tell a re-delivered snapshot read from a second equal row, so its reads (op `r`) are always
appended; its streamed changes have a position of their own each.

Reading the changelog back is bounded: re-deliveries follow their originals closely, and the
sequence column's statistics (file statistics in Delta and Iceberg, an index-free range scan in
a JDBC database) limit the read to the newest rows.  Each target answers `changelog_since`.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from headwater.pipeline.columnar import SEQ, ColumnarChanges
from headwater.pipeline.decode import ChangeEvent, TableChanges

CHANGELOG_OP = "__op"  # (the net rows' op column is `columnar.OP`, another name)
OFFSET_DIGITS = 16  # every sequence ends with the event's topic offset as 16 hex digits
_POS = "__hw_pos"
_ROW = "__hw_row"


class ChangelogReader(Protocol):
    """A target that can show the rows its changelog already holds."""

    def changelog_since(self, changes: Any, since: str, keys: Sequence[str]
                        ) -> pa.Table | None:
        """The changelog's rows whose `__hw_sequence` >= `since`: columns `__hw_sequence`,
        `__op` and `keys`; None when the table does not exist yet."""
        ...


def position(sequences: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The source position part of sequences (without the topic offset)."""
    return pc.utf8_slice_codeunits(sequences, 0, -OFFSET_DIGITS)


def first_rows(changes: ColumnarChanges, target: ChangelogReader) -> ColumnarChanges:
    """`changes` (changelog rows, `columnar.decode_changelog`) without re-deliveries."""
    rows = changes.rows
    keep = first_mask(rows.select([SEQ, CHANGELOG_OP, *changes.key_columns]), changes.key_columns,
                   changes, target)
    if keep is None:
        return changes
    return ColumnarChanges(changes.topic, changes.schema_name, changes.table_name,
                           changes.key_columns, changes.columns, changes.events,
                           rows.filter(keep), list(changes.toast), changes.target)


def first_events(changes: TableChanges, target: ChangelogReader) -> TableChanges:
    """`changes` (decoded events) without re-deliveries, for the event path's changelog."""
    events = sorted(changes.events, key=lambda e: e.offset)
    keys = changes.key_columns
    table = pa.table({SEQ: pa.array([e.sequence for e in events], pa.string()),
                      CHANGELOG_OP: pa.array([e.op for e in events], pa.string()),
                      **{k: _key_values(events, i) for i, k in enumerate(keys)}})
    keep = first_mask(table, keys, changes, target)
    out = copy.copy(changes)
    out.events = events if keep is None else [
        e for e, k in zip(events, keep.to_pylist(), strict=True) if k]
    return out


def _chunks(values: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return list(values.chunks) if isinstance(values, pa.ChunkedArray) else [values]


def _aligned(new: pa.Array | pa.ChunkedArray, old: pa.Array | pa.ChunkedArray
             ) -> tuple[pa.Array | pa.ChunkedArray, pa.Array | pa.ChunkedArray]:
    """A key column of the batch and of the changelog in one type: the batch's, else (a
    target storing the key in another representation) both as text."""
    if pa.types.is_null(new.type):
        return new.cast(old.type), old
    try:
        return new, old.cast(new.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return new.cast(pa.string()), old.cast(pa.string())


def _key_values(events: Sequence[ChangeEvent], i: int) -> pa.Array:
    return pa.array([None if e.key is None else e.key[i] for e in events])


def first_mask(table: pa.Table, keys: Sequence[str], changes: TableChanges | ColumnarChanges,
            target: ChangelogReader) -> pa.Array | None:
    """A mask of the rows of `table` (`__hw_sequence`, `__op`, keys; in delivery order) that
    are first deliveries; None when all are."""
    if not table.num_rows:
        return None
    n = table.num_rows
    new = [position(table.column(SEQ)), table.column(CHANGELOG_OP),
           *(table.column(k) for k in keys), pa.array(range(n), pa.int64())]
    names = [_POS, CHANGELOG_OP, *keys, _ROW]
    since = pc.min(new[0]).as_py()
    seen = target.changelog_since(changes, since, keys) if since is not None else None
    if seen is not None and seen.num_rows:
        old = [position(seen.column(SEQ).cast(pa.string())),
               seen.column(CHANGELOG_OP).cast(pa.string()),
               *(seen.column(k) for k in keys), pa.array([-1] * seen.num_rows, pa.int64())]
        for i in range(2, 2 + len(keys)):
            new[i], old[i] = _aligned(new[i], old[i])
        new = [pa.chunked_array([*_chunks(a), *_chunks(b)]) for a, b in zip(new, old,
                                                                           strict=True)]
    ident = pa.table(new, names=names)
    firsts = ident.group_by(names[:-1], use_threads=False).aggregate([(_ROW, "min")])
    keep = pc.is_in(pa.array(range(n), pa.int64()),
                    value_set=firsts.column(_ROW + "_min").combine_chunks())
    if not keys:  # a keyless table's snapshot reads: never taken for re-deliveries
        keep = pc.or_(keep, pc.equal(table.column(CHANGELOG_OP), "r"))
    return None if pc.all(keep).as_py() else keep
