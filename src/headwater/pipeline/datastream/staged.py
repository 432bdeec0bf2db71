"""Datastream events of the topic log in the executor stage (`pipeline.tasks`): a part's events
decoded on an executor into the staged layout of events decoded one by one (`fragments`), one
staged table per `object`, and what the driver needs to net them across parts exactly as its
event path (`apply.apply_events`) applies the whole batch.

- The part's events are grouped by `object` and decoded by `events.decode_object`, as the
  driver does; re-deliveries inside the part are dropped by `uuid` (`net.dedup`), those across
  parts by the driver (`part_net.first_deliveries`, on the staged `ID` column: the part order
  is the offset order, so the first delivery is kept, as `net.dedup` keeps it).
- A staged sequence is the event's `sort_keys` sequence followed by its offset (16 hex
  digits), as the Debezium decoders' sequences end, so that the cross-part net orders two
  events of a key with equal `sort_keys` by offset, as the event path's stable sort does; the
  driver cuts the offset off after the net (`SEQ_SUFFIX`).
- JSON events carry no types: a column's type comes from the kinds of its values in the whole
  batch and from the target table's type (`types.json_field`).  A part only sees its own
  values, so it types them by those alone and reports per column its kind and its values'
  kind (`events.payload_kinds`, the part's `fields`); the driver joins them in part order
  (`columns`: the same fold as over the batch's events), asks the target for its column types
  (a public target method, in the driver) and converts a part's column whose type differs by
  the final type's own decoder (`conform`), which gives the value the driver's decode gives.
- A part whose events carry different payload columns (a column added or dropped at the
  source) is refused, as is a batch whose parts disagree on them, or on the key columns:
  the driver's event path takes such batches, as it takes Debezium rows whose schema changes
  inside a batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson
import pyarrow as pa

from headwater.pipeline.columnar import ColumnarChanges
from headwater.pipeline.datastream import types
from headwater.pipeline.datastream.events import (
    decode_object,
    group_by_object,
    payload_kinds,
    raw_events,
)
from headwater.pipeline.decode import Column
from headwater.pipeline.fragments import Refused, event_fragments
from headwater.pipeline.net import dedup

ID = "__hw_id"  # a staged fragment's event identity (the Datastream `uuid`)
SEQ_SUFFIX = 16  # the offset digits a staged sequence ends with


def decode_part(topic: str, records: Iterable[tuple[int, bytes | None, bytes | None]]
                ) -> list[tuple[str, ColumnarChanges, str]]:
    """(object, its staged rows, its `fields`) for each object of a part's records."""
    out: list[tuple[str, ColumnarChanges, str]] = []
    for obj, items in sorted(group_by_object(raw_events(records)).items()):
        if len({frozenset(i.event.get("payload") or ()) for i in items}) > 1:
            raise Refused(f"object {obj}: the payload's columns change inside the part")
        changes = decode_object(topic, items)
        ids = {i.ordinal: str(i.event.get("uuid")) for i in items}
        events = [e._replace(sequence=f"{e.sequence}{e.offset:016x}")
                  for e in dedup(changes.events)]
        decoded = event_fragments(changes, events)
        if decoded is None:
            continue
        decoded.rows = decoded.rows.append_column(
            ID, pa.array([ids[e.offset] for e in events], pa.string()))
        kinds = payload_kinds(items)
        out.append((obj, decoded, orjson.dumps([[n, *k] for n, k in kinds.items()]).decode()))
    return out


def columns(fields: list[str], existing: Mapping[str, pa.DataType]) -> list[Column]:
    """The batch's columns from its staged parts' `fields` (in part order) and the target's
    column types, as `events.decode_object` types the whole batch; refuses parts whose payload
    columns differ."""
    kinds: dict[str, str | None] = {}
    names: set[frozenset[str]] = set()
    for text in fields:
        part: list[list[Any]] = orjson.loads(text)
        names.add(frozenset(n for n, _k, _v in part))
        for name, kind, values in part:
            if kinds.get(name) is None:
                kinds[name] = kind  # the first part with a value types it as its own
            elif values is not None:
                kinds[name] = types.join_kinds(kinds[name], values)
    if len(names) > 1:
        raise Refused("the payload's columns change inside the batch")
    out: list[Column] = []
    for name, kind in kinds.items():
        ftype = types.json_field(kind, existing.get(name))
        if ftype is not None:
            out.append(Column(name, ftype, True))
    return out


def conform(rows: pa.Table, batch: list[Column]) -> pa.Table:
    """A part's staged rows with the batch's column types: a column the part typed otherwise
    (a long that other parts make double, a number the target keeps as text) is decoded again
    from its values by the batch type's decoder, as the driver's decode would have; a column
    the part left out (only nulls in it) is there, null, when the batch has it (the target's
    type)."""
    for c in batch:
        at = rows.schema.get_field_index(c.name)
        if at < 0:
            rows = rows.append_column(c.name, pa.nulls(rows.num_rows, c.type.arrow))
            continue
        if rows.schema.field(at).type == c.type.arrow:
            continue
        decode = c.type.decode
        values = [None if v is None else decode(v) for v in rows.column(at).to_pylist()]
        rows = rows.set_column(at, c.name, pa.array(values, c.type.arrow))
    return rows
