"""Order and identity of Datastream events, as the pipeline's sequence strings.

The relational path compares a *sequence*, a fixed-width hex string whose lexical order is the
change order of one key, in its MERGE predicates and keeps it per row (`__hw_sequence`).  A
Datastream event's order is its `sort_keys`, compared element-wise as integers (a shorter list
first when it is a prefix of a longer one); encoding every element at a fixed width keeps that
order lexically, so Datastream events reuse the same column, rules and state:

- an event older than the row the target holds never overwrites it (late files);
- remembered deletes and SCD2 versions are compared the same way.

Re-deliveries are identified by `uuid` alone: it is derived from the source position (a
re-delivered event keeps it), whereas `read_timestamp` changes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

_BIAS = 1 << 63  # signed longs as unsigned: negatives sort before 0
_MAX = 1 << 64
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class UnorderableEventError(ValueError):
    """An event whose `sort_keys` the pipeline cannot order."""


def sequence(sort_keys: Sequence[Any], where: str = "") -> str:
    """`sort_keys` (Avro longs) as a string with the same order: 16 hex digits per element."""
    parts: list[str] = []
    for item in sort_keys:
        if type(item) is not int:
            # Datastream's Avro type allows strings; Headwater writes longs only, and a string
            # has no fixed-width form that keeps its order next to numbers.
            raise UnorderableEventError(
                f"{where}: sort_keys item {item!r} is not an integer; the pipeline orders "
                "events by integer sort_keys only")
        biased = item + _BIAS
        if not 0 <= biased < _MAX:
            raise UnorderableEventError(f"{where}: sort_keys item {item} is not a long")
        parts.append(f"{biased:016x}")
    return "".join(parts)


def op_of(event: Mapping[str, Any]) -> str:
    """The Debezium-style op the pipeline's modes work with: `d` for `is_deleted` (a delete,
    or the delete half of a primary-key change), `r` for backfill rows, `c` for inserts and
    `u` for the rest (UPDATE, UPDATE-INSERT)."""
    meta = event.get("source_metadata") or {}
    if meta.get("is_deleted"):
        return "d"
    if "backfill" in str(event.get("read_method", "")):
        return "r"
    return "c" if meta.get("change_type") == "INSERT" else "u"


def millis(value: Any) -> int | None:
    """An event timestamp as epoch milliseconds: Avro's `timestamp-millis` (a datetime from
    fastavro, or a long) or JSON's ISO-8601 text (`2019-11-07T07:37:16.808Z`)."""
    if value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value[:-1] + "+00:00" if value.endswith("Z") else value
        value = dt.datetime.fromisoformat(text)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return int((value - _EPOCH) // dt.timedelta(milliseconds=1))
    raise ValueError(f"not a timestamp: {value!r}")


def pg_lsn(text: Any) -> int | None:
    """PostgreSQL's `16/B374D848` as the integer the changelog's `__lsn` holds."""
    if not isinstance(text, str) or "/" not in text:
        return None
    hi, _, lo = text.partition("/")
    try:
        return (int(hi, 16) << 32) | int(lo, 16)
    except ValueError:
        return None
