"""SCD type 2 history of one key, rebuilt from its stored versions plus newly arrived events.

A version is (start, end, row): valid from `start` (inclusive) to `end` (exclusive, None while
current), both source sequences.  The rebuild treats every stored version as an upsert at its
start (and a delete at its end when no version follows), merges in the new events, and replays
the points in sequence order:

- an upsert opens a new version and closes the open one at its sequence, unless only untracked
  columns changed (`track_history_column_list` / `track_history_except_column_list`): then the
  open version is updated in place, as Spark's AUTO CDC does;
- a delete closes the open version;
- a truncate acts as a delete of every key at its sequence (`floor`).

Because late events are merged by sequence, they land at the right place in the history.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from headwater.pipeline.columnar import SEQ, TOAST_FLAG


class Version(NamedTuple):
    start: str
    end: str | None
    row: dict[str, Any]


class Point(NamedTuple):
    sequence: str
    delete: bool
    row: dict[str, Any] | None
    unavailable: frozenset[str] = frozenset()  # unchanged TOAST: keep the previous value


def tracked_columns(
    columns: Sequence[str], track: Sequence[str] | None, track_except: Sequence[str] | None
) -> frozenset[str]:
    if track is not None and track_except is not None:
        raise ValueError(
            "set either track_history_column_list or track_history_except_column_list, not both")
    if track is not None:
        return frozenset(track)
    if track_except is not None:
        return frozenset(c for c in columns if c not in set(track_except))
    return frozenset(columns)


def rebuild(
    versions: Iterable[Version], events: Iterable[Point], tracked: frozenset[str],
    floor: str | None = None,
) -> list[Version]:
    points: dict[str, Point] = {}
    ordered = sorted(versions, key=lambda v: v.start)
    starts = {v.start for v in ordered}
    for v in ordered:
        points[v.start] = Point(v.start, False, v.row)
        if v.end is not None and v.end not in starts:
            points.setdefault(v.end, Point(v.end, True, None))
    for e in events:
        points[e.sequence] = e  # a re-delivered event replaces its own earlier copy
    if floor is not None:
        points.setdefault(floor, Point(floor, True, None))
    out: list[Version] = []
    current: Version | None = None
    for seq in sorted(points):
        p = points[seq]
        if p.delete:
            if current is not None:
                out.append(current._replace(end=seq))
                current = None
            continue
        row = p.row or {}
        if p.unavailable and current is not None:
            row = {**row, **{c: current.row.get(c) for c in p.unavailable}}
        if current is not None:
            if all(current.row.get(c) == row.get(c) for c in tracked):
                current = current._replace(row=row)  # untracked change: in place
                continue
            out.append(current._replace(end=seq))
        current = Version(seq, None, row)
    if current is not None:
        out.append(current)
    return out


# -- many keys at once, in Arrow ---------------------------------------------------------------

START = "__START_AT"  # a version's validity, as the history tables name it: [start, end)
END = "__END_AT"  # null while the version is current
ACTION = "__hw_action"  # a history row's part in the MERGE: 'u' write it, 'd' remove it
KIND = "__hw_kind"  # a point's origin: 'v' stored version, 'x' remembered delete, 'e' event
OP = "__op"  # a changelog row's op (`columnar.CHANGELOG_META`)


def changed_versions(points: pa.Table, keys: Sequence[str], taken: Sequence[str],
                     toast: Sequence[str], tracked: frozenset[str], floor: str | None,
                     schema: pa.Schema) -> pa.Table:
    """The history rows a batch changes, for the keys of `points`: per key, its stored
    versions (KIND 'v': the columns, `__START_AT`, `__END_AT`), its remembered deletes ('x':
    `__hw_sequence`) and the batch's events ('e': the columns, `__hw_sequence`, `__op`, a
    TOAST flag per name in `toast`), rebuilt by `rebuild` with the truncate `floor`.  The
    result (`schema`: `taken` plus `__START_AT`, `__END_AT`, `__hw_action`): the rebuilt
    versions that differ from the stored ones ('u') and the stored versions the rebuild
    dropped ('d', key and start only).

    A key whose only point is one event is rebuilt column-wise (an upsert opens a version,
    closed at the floor when older; a delete leaves nothing): the shape of most keys of a
    snapshot or of a batch over many keys, without a Python object per row.  The other keys
    go through `rebuild` itself, one key at a time."""
    n = points.num_rows
    if not n:
        return schema.empty_table()
    points = points.take(pc.sort_indices(points, [(k, "ascending") for k in keys]))
    first = np.zeros(n, dtype=bool)  # where a key's points begin
    first[0] = True
    for k in keys:
        col = points.column(k).combine_chunks()
        first[1:] |= pc.fill_null(pc.not_equal(col[1:], col[:-1]), True).to_numpy(
            zero_copy_only=False)
    group = np.cumsum(first) - 1
    alone = (np.bincount(group) == 1)[group]
    simple = alone & pc.equal(points.column(KIND), "e").to_numpy(zero_copy_only=False)
    upsert = pc.fill_null(pc.not_equal(points.column(OP), "d"), False)
    upserts = points.filter(pa.array(simple & upsert.to_numpy(zero_copy_only=False)))
    seq = upserts.column(SEQ)
    end = (pa.nulls(len(seq), pa.string()) if floor is None else
           pc.if_else(pc.less(seq, floor), pa.scalar(floor), pa.scalar(None, pa.string())))
    opened = pa.Table.from_arrays(  # (cast: Spark's Arrow types may differ in detail)
        [*(upserts.column(c) for c in taken), seq, end,
         pa.array(["u"] * upserts.num_rows, pa.string())], names=schema.names).cast(schema)
    rest = points.filter(pa.array(~simple))
    bounds = [*np.flatnonzero(first[~simple]).tolist(), rest.num_rows]
    rows = rest.to_pylist()
    out: list[dict[str, Any]] = []
    for a, b in itertools.pairwise(bounds):
        out += _key_versions(rows[a:b], keys, taken, toast, tracked, floor)
    return pa.concat_tables([opened, pa.Table.from_pylist(out, schema=schema)])


def _key_versions(group: list[dict[str, Any]], keys: Sequence[str], taken: Sequence[str],
                  toast: Sequence[str], tracked: frozenset[str], floor: str | None
                  ) -> list[dict[str, Any]]:
    """`changed_versions` of one key's points, by `rebuild`."""
    versions: list[Version] = []
    remembered: list[Point] = []
    events: list[Point] = []
    for r in group:  # (a point's row is its whole record: only the columns are read)
        kind = r[KIND]
        if kind == "v":
            versions.append(Version(r[START], r[END], r))
        elif kind == "x":
            remembered.append(Point(r[SEQ], True, None))
        else:
            unsent = frozenset(c for c in toast if r[TOAST_FLAG + c]) if toast else frozenset()
            events.append(Point(r[SEQ], r[OP] == "d", r, unsent))
    stored = {v.start: v for v in versions}
    # (remembered deletes first: an event of the same sequence replaces them)
    rebuilt = rebuild(versions, [*remembered, *events], tracked, floor)
    out: list[dict[str, Any]] = []
    for v in rebuilt:
        old = stored.get(v.start)
        row = {c: v.row.get(c) for c in taken}
        if old is not None and old.end == v.end and all(old.row.get(c) == row[c] for c in taken):
            continue  # unchanged: not rewritten
        out.append({**row, START: v.start, END: v.end, ACTION: "u"})
    kept = {v.start for v in rebuilt}
    for start in stored:
        if start not in kept:
            out.append({**dict.fromkeys(taken), **{k: group[0][k] for k in keys},
                        START: start, END: None, ACTION: "d"})
    return out
