"""Events decoded one by one, as the executor stage's staged rows: the layout a part outside
the column-wise shape stages (`tasks._by_events`), and Datastream's parts
(`datastream.staged`), so both decoders fill the same batch the driver nets across parts
(`part_net`).

Each event left after `net.dedup` is a fragment: its own values and unchanged-TOAST flags,
which the cross-part net treats as a part's net row of one event.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from headwater.pipeline.columnar import (
    CARRY_SEQ,
    DELETED,
    OP,
    SEQ,
    TOAST_FLAG,
    ColumnarChanges,
)
from headwater.pipeline.decode import ChangeEvent, TableChanges


class Refused(Exception):
    """A part the executor stage leaves to the driver's event path (the message says why)."""


def event_fragments(changes: TableChanges, events: list[ChangeEvent]
                    ) -> ColumnarChanges | None:
    """`events` (`changes`' without re-deliveries) in the staged layout (None: no events);
    refuses what that layout cannot say: a truncate (the event path clears the target) and an
    event without a key (the event path names the keyless table)."""
    if not events:
        return None
    if any(e.op == "t" for e in events):
        raise Refused("a truncate")
    if any(e.key is None for e in events):
        raise Refused("an event without a key")
    columns = changes.column_list
    keys = changes.key_columns
    toast = [c.name for c in columns if any(c.name in e.unavailable for e in events)]
    data: dict[str, list[Any]] = {c.name: [] for c in columns}
    flags: dict[str, list[bool]] = {c: [] for c in toast}
    for e in events:
        delete = e.op == "d"
        row = {} if delete else (e.row or {})
        for c in columns:
            data[c.name].append(row.get(c.name))
        if delete:
            assert e.key is not None
            for k, v in zip(keys, e.key, strict=True):
                data[k][-1] = v
        for name in toast:
            flags[name].append(not delete and name in e.unavailable)
    seqs = [e.sequence for e in events]
    ops = ["d" if e.op == "d" else "u" for e in events]
    arrays = [pa.array(data[c.name], c.type.arrow) for c in columns]
    arrays += [pa.array(seqs, pa.string()), pa.array(ops, pa.string())]
    arrays += [pa.array(flags[n], pa.bool_()) for n in toast]
    arrays += [pa.array([None if f or o == "d" else s
                         for f, s, o in zip(flags[n], seqs, ops, strict=True)], pa.string())
               for n in toast]
    arrays.append(pa.nulls(len(events), pa.string()))
    rows = pa.Table.from_arrays(arrays, names=[
        *(c.name for c in columns), SEQ, OP, *(TOAST_FLAG + n for n in toast),
        *(CARRY_SEQ + n for n in toast), DELETED])
    return ColumnarChanges(changes.topic, changes.schema_name, changes.table_name, keys,
                           columns, len(changes.events), rows, toast=toast)
