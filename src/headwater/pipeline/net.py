"""Net effect per key of one batch of change events: pure, so it can be tested exhaustively.

Steps, in order:
1. *dedup*: drop re-deliveries (same key, LSN, txId, op), keeping the first one;
2. *truncate*: events older than the batch's newest truncate are dropped, the truncate itself
   is returned separately (it clears the target below its sequence);
3. *fold*: per key the event with the highest sequence wins; if it is an update whose unchanged
   TOAST columns were not sent, their values come from the key's previous event in the batch
   when there is one (otherwise the target keeps its current value).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from headwater.pipeline.decode import ChangeEvent


class NetChange(NamedTuple):
    key: tuple[Any, ...]
    delete: bool
    sequence: str
    row: dict[str, Any] | None
    unavailable: frozenset[str]  # columns to keep from the target


class KeylessTableError(ValueError):
    pass


def dedup(events: Sequence[ChangeEvent]) -> list[ChangeEvent]:
    seen: set[tuple[Any, ...]] = set()
    out: list[ChangeEvent] = []
    for e in sorted(events, key=lambda e: e.offset):
        if e.dedup in seen:
            continue
        seen.add(e.dedup)
        out.append(e)
    return out


def net_changes(
    events: Sequence[ChangeEvent], table: str
) -> tuple[list[NetChange], str | None]:
    """(net change per key, newest truncate sequence in the batch or None)."""
    unique = dedup(events)
    truncate = max((e.sequence for e in unique if e.op == "t"), default=None)
    per_key: dict[tuple[Any, ...], list[ChangeEvent]] = {}
    for e in unique:
        if e.op == "t" or (truncate is not None and e.sequence < truncate):
            continue
        if e.key is None:
            raise KeylessTableError(
                f"table {table} has no key (no primary key and no message.key.columns): a "
                "merge needs one; set message.key.columns on the connector or use the "
                "changelog mode"
            )
        per_key.setdefault(e.key, []).append(e)
    out: list[NetChange] = []
    for key, evs in per_key.items():
        evs.sort(key=lambda e: e.sequence)
        last = evs[-1]
        if last.op == "d":
            out.append(NetChange(key, True, last.sequence, None, frozenset()))
            continue
        row = dict(last.row or {})
        missing = set(last.unavailable)
        for prev in reversed(evs[:-1]):
            if not missing or prev.op == "d":
                break
            if prev.row is None:
                continue
            for col in list(missing):
                if col not in prev.unavailable and col in prev.row:
                    row[col] = prev.row[col]
                    missing.discard(col)
        out.append(NetChange(key, False, last.sequence, row, frozenset(missing)))
    return out, truncate
