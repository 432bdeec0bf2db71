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

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple


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
