"""A micro-batch of Datastream events into the target: the runner's step for Datastream
topics and for the files source.

Events are grouped by `object` (one table each), decoded into `TableChanges`
(`events.decode_object`) and applied by the relational path's modes, so SCD1, SCD2 and the
targets' exactly-once commits are the same code.  The changelog is the exception: it appends
every event, so a re-delivery arriving in a later batch (a file written again after a
capture's crash, a copied file) is dropped here by its `uuid`, kept in the hidden column
`__hw_uuid`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from headwater.pipeline.columnar import CHANGELOG_META, SEQ
from headwater.pipeline.datastream.events import (
    RawEvent,
    decode_object,
    group_by_object,
    is_datastream_event,
    raw_events,
)
from headwater.pipeline.datastream.files import EVENTS_PER_FILE, read_file, read_log
from headwater.pipeline.decode import TableChanges
from headwater.pipeline.net import dedup
from headwater.pipeline.source import read_range

log = logging.getLogger("headwater.pipeline.datastream")

UUID = "__hw_uuid"
_KNOWN: dict[tuple[str, str], bool] = {}


def is_datastream_topic(root: Path, topic: str, first: int, end: int) -> bool:
    """Whether a topic's records are Datastream events (judged by its first record, then
    remembered: a topic holds one format)."""
    known = _KNOWN.get((str(root), topic))
    if known is not None:
        return known
    for _offset, _key, value in read_range(root, topic, first, end):
        if value is not None:
            try:
                found = is_datastream_event(orjson.loads(value))
            except orjson.JSONDecodeError:
                found = False
            _KNOWN[(str(root), topic)] = found
            return found
    return False


def topic_events(root: Path, topic: str, first: int, end: int) -> list[RawEvent]:
    return raw_events(read_range(root, topic, first, end))


def file_events(root: Path, log_path: Path, start: int, end: int) -> list[RawEvent]:
    """The events of the files of file log lines [start, end)."""
    out: list[RawEvent] = []
    for i, name in enumerate(read_log(log_path, start, end)):
        path = root / name
        try:
            out.extend(read_file(path, (start + i) * EVENTS_PER_FILE))
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{path}: listed in the pipeline's file log but gone; event files must stay "
                "until the pipeline has read them") from None
    return out


def apply_events(events: list[RawEvent], topic: str | None, batch_id: int, mode: str,
                 target: Any, track: tuple[str, ...] | None = None,
                 track_except: tuple[str, ...] | None = None) -> int:
    """Applies a batch of Datastream events in `mode` into the target (Delta, Iceberg or
    JDBC: each reads its column types back for JSON events, `column_types`); returns the
    number of events."""
    from headwater.pipeline.runner import apply_changes

    total = 0
    for name, items in objects(events, topic):
        changes = typed_changes(target, name, items)
        if mode == "changelog":
            append_changelog(target, changes, [str(i.event.get("uuid")) for i in items],
                             batch_id)
        else:
            apply_changes(changes, batch_id, target, mode, track, track_except)
        total += len(items)
    return total


def objects(events: list[RawEvent], topic: str | None) -> list[tuple[str, list[RawEvent]]]:
    """The batch's events per source object, in name order, each named by its topic (the
    topic log's, one object a topic) or, in the files, by the object itself."""
    return [(topic or obj, items) for obj, items in sorted(group_by_object(events).items())]


def typed_changes(target: Any, name: str, items: list[RawEvent],
                  table: str | None = None) -> TableChanges:
    """One object's events decoded with the target table's column types, which JSON columns
    keep where their values fit (`table`: the table when it is not the object's own, as an
    AUTO CDC flow's)."""
    if all(i.columns is not None for i in items):
        return decode_object(name, items)  # Avro: the schema types every column
    probe = decode_object(name, items[:1])
    probe.target = table if table is not None else probe.target
    return decode_object(name, items, target.column_types(probe))


def append_changelog(target: Any, changes: TableChanges, uuids: Iterable[str],
                     batch_id: int) -> None:
    """Appends every event not appended before (by uuid), in the relational changelog's
    columns plus `__hw_uuid`."""
    by_ordinal = dict(zip((e.offset for e in changes.events), uuids, strict=True))
    events = dedup(changes.events)  # re-deliveries inside the batch
    if events:
        done = set(target.column_values(changes, UUID))
        events = [e for e in events if by_ordinal[e.offset] not in done]
    if not events:
        return
    columns = changes.column_list
    meta = {
        "__op": [e.op for e in events], SEQ: [e.sequence for e in events],
        "__source_ts_ms": [e.source_ts_ms for e in events],
        "__ts_ms": [e.ts_ms for e in events], "__lsn": [e.lsn for e in events],
        "__tx_id": [e.tx_id for e in events], "__snapshot": [e.snapshot for e in events],
        "__offset": [e.offset for e in events],
    }
    arrays = [pa.array(meta[f.name], f.type) for f in CHANGELOG_META]
    arrays += [pa.array([(e.row or {}).get(c.name) for e in events], c.type.arrow)
               for c in columns]
    arrays.append(pa.array([by_ordinal[e.offset] for e in events], pa.string()))
    table = pa.Table.from_arrays(
        arrays, names=[*CHANGELOG_META.names, *(c.name for c in columns), UUID])
    target.append_changelog_table(changes, table.sort_by(SEQ), batch_id)


def apply_files(root: Path, log_path: Path, start: int, end: int, batch_id: int, mode: str,
                target: Any, track: tuple[str, ...] | None = None,
                track_except: tuple[str, ...] | None = None) -> int:
    """Applies the files of file log lines [start, end)."""
    events = file_events(root, log_path, start, end)
    total = apply_events(events, None, batch_id, mode, target, track, track_except)
    log.info("batch %d: %d files, %d Datastream events applied (%s)", batch_id, end - start,
             total, mode)
    return total

