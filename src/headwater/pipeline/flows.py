"""Flows in the shape of Spark's AUTO CDC: `create_auto_cdc_flow(target=, source=, keys=, ...)`.

Spark Declarative Pipelines' `create_auto_cdc_flow` cannot run here (it needs a table format
with row-level MERGE inside Spark), so Headwater applies the changes itself; this module gives a
Spark AUTO CDC user the same vocabulary:

| AUTO CDC argument | here |
|---|---|
| target | Delta table: a path, or a name under the pipeline's `delta_path` |
| source | a change topic, e.g. `dbserver1.inventory.customers` |
| keys | key columns (default: the event key, i.e. the primary key) |
| sequence_by | a column of the row to order by (default: the source position, which is exact) |
| apply_as_deletes | a predicate over the row (Python callable): upserts it accepts become deletes |
| apply_as_truncates | a predicate over the row: events it accepts truncate the target |
| column_list / except_column_list | the columns to keep / to drop (keys are always kept) |
| stored_as_scd_type | 1 (upsert) or 2 (history with `__START_AT`, `__END_AT`) |
| track_history_column_list / track_history_except_column_list | SCD2 tracked columns |

A flow is applied by `transform` (a pure function of the decoded changes) and then by the same
Delta target code as the property-configured pipeline.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from headwater.pipeline.decode import ChangeEvent, TableChanges

RowPredicate = Callable[[dict[str, Any]], bool]


@dataclass(frozen=True)
class AutoCdcFlow:
    target: str
    source: str
    keys: tuple[str, ...] | None = None
    sequence_by: str | None = None
    apply_as_deletes: RowPredicate | None = None
    apply_as_truncates: RowPredicate | None = None
    column_list: tuple[str, ...] | None = None
    except_column_list: tuple[str, ...] | None = None
    stored_as_scd_type: int = 1
    track_history_column_list: tuple[str, ...] | None = None
    track_history_except_column_list: tuple[str, ...] | None = None


def create_auto_cdc_flow(
    *,
    target: str,
    source: str,
    keys: Sequence[str] | None = None,
    sequence_by: str | None = None,
    apply_as_deletes: RowPredicate | None = None,
    apply_as_truncates: RowPredicate | None = None,
    column_list: Sequence[str] | None = None,
    except_column_list: Sequence[str] | None = None,
    stored_as_scd_type: int | str = 1,
    track_history_column_list: Sequence[str] | None = None,
    track_history_except_column_list: Sequence[str] | None = None,
) -> AutoCdcFlow:
    """A flow from a change topic into a target table (see the module docstring)."""
    scd = int(stored_as_scd_type)
    if scd not in (1, 2):
        raise ValueError(f"stored_as_scd_type must be 1 or 2, got {stored_as_scd_type!r}")
    if column_list is not None and except_column_list is not None:
        raise ValueError("set either column_list or except_column_list, not both")
    if track_history_column_list is not None and track_history_except_column_list is not None:
        raise ValueError(
            "set either track_history_column_list or track_history_except_column_list")
    if scd == 1 and (track_history_column_list or track_history_except_column_list):
        raise ValueError("track_history_* lists apply to stored_as_scd_type=2 only")

    def tup(v: Sequence[str] | None) -> tuple[str, ...] | None:
        return tuple(v) if v is not None else None

    return AutoCdcFlow(
        target, source, tup(keys), sequence_by, apply_as_deletes, apply_as_truncates,
        tup(column_list), tup(except_column_list), scd, tup(track_history_column_list),
        tup(track_history_except_column_list),
    )


def _sortable(value: Any) -> str:
    """A string whose lexical order is the value's order (for sequence_by columns)."""
    if value is None:
        return "0"
    if isinstance(value, bool):
        return f"1{int(value)}"
    if isinstance(value, (int, Decimal, float)):
        d = Decimal(value)
        sign = "2" if d >= 0 else "1"
        digits: str = format(abs(d), "040.12f")
        if d < 0:  # invert digits so that larger magnitudes sort first
            digits = digits.translate(str.maketrans("0123456789", "9876543210"))
        return sign + digits
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        stamp: str = value.isoformat()
        return "1" + stamp
    if isinstance(value, dt.date):
        day: str = value.isoformat()
        return "1" + day
    return "1" + str(value)


def transform(flow: AutoCdcFlow, changes: TableChanges) -> TableChanges:
    """The changes as the flow sees them: its columns, keys, sequence and delete rules."""
    out = TableChanges(changes.topic)
    out.schema_name, out.table_name = changes.schema_name, changes.table_name
    out.target = flow.target
    keys = flow.keys or changes.key_columns
    missing = [k for k in keys if k not in changes.columns]
    if missing:
        raise ValueError(f"flow {flow.target}: keys {missing} are not columns of {changes.topic}")
    out.key_columns = tuple(keys)
    names = list(changes.columns)
    if flow.column_list is not None:
        names = [n for n in names if n in flow.column_list or n in keys]
    if flow.except_column_list is not None:
        names = [n for n in names if n not in flow.except_column_list or n in keys]
    out.columns = {n: changes.columns[n] for n in names}
    for e in changes.events:
        row = e.row
        op = e.op
        if row is not None:
            if op != "d" and flow.apply_as_truncates is not None and flow.apply_as_truncates(row):
                op = "t"
            elif op != "d" and flow.apply_as_deletes is not None and flow.apply_as_deletes(row):
                op = "d"
            row = {n: row.get(n) for n in names}
        key = e.key
        if flow.keys is not None and op != "t":
            if row is None or any(row.get(k) is None for k in keys):
                raise ValueError(
                    f"flow {flow.target}: event at offset {e.offset} of {changes.topic} has no "
                    f"value for key column(s) {', '.join(keys)} (deletes under REPLICA IDENTITY "
                    "DEFAULT carry only the primary key: use REPLICA IDENTITY FULL)"
                )
            key = tuple(row[k] for k in keys)
        sequence = e.sequence
        if flow.sequence_by is not None:
            if row is None or flow.sequence_by not in (e.row or {}):
                raise ValueError(f"flow {flow.target}: sequence_by column {flow.sequence_by!r} "
                                 f"is missing at offset {e.offset} of {changes.topic}")
            sequence = _sortable((e.row or {})[flow.sequence_by]) + "|" + e.sequence
        # The event's own dedup id: re-deliveries of it are still equal under the flow's keys,
        # and it is the model's (Debezium's topic key, position and op; Datastream's uuid)
        out.events.append(ChangeEvent(
            op, key, row, sequence, e.dedup, e.offset,
            e.unavailable & set(names), e.source_ts_ms, e.ts_ms, e.lsn, e.tx_id, e.snapshot,
        ))
    return out
