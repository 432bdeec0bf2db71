"""Which rows of a target are the source's current rows, per pipeline mode, as SQL.

- `scd1`: every row (one per source row).
- `scd2`: the open versions (`__END_AT` is null); a deleted key's version is closed.
- `changelog`: per key, the latest event by `__hw_sequence` (the source's order), unless it is
  a delete; a truncate (`__op = 't'`, no image) ends every row before it, so only events after
  the newest truncate count.

The same SQL runs in DataFusion (a Delta changelog, through delta-rs), PostgreSQL and MariaDB
(JDBC targets): only identifier quoting differs.
"""

from __future__ import annotations

from collections.abc import Callable

from headwater.pipeline.columnar import SEQ
from headwater.pipeline.delta_target import END
from headwater.validate.model import TablePlan

OP = "__op"


def truncate_floor_sql(q: Callable[[str], str], table: str) -> str:
    """The newest truncate's sequence (NULL when none) of changelog table `table`."""
    return f"SELECT MAX({q(SEQ)}) FROM {table} WHERE {q(OP)} = 't'"


def current_sql(q: Callable[[str], str], table: str, plan: TablePlan,
                truncated_at: str | None = None) -> str:
    """A SELECT of the current rows of target `table` (quoted, qualified), with at least the
    plan's compared columns."""
    if plan.mode == "scd1":
        return f"SELECT * FROM {table}"
    if plan.mode == "scd2":
        return f"SELECT * FROM {table} WHERE {q(END)} IS NULL"
    if plan.mode != "changelog":
        raise ValueError(f"no current rows for mode {plan.mode!r}")
    cols = ", ".join(q(c) for c, _ in plan.columns)
    keys = ", ".join(q(k) for k in plan.key)
    floor = ""
    if truncated_at is not None:
        floor = " AND {} > '{}'".format(q(SEQ), truncated_at.replace("'", "''"))
    return (f"SELECT {cols} FROM (SELECT {cols}, {q(OP)} AS hw_op, ROW_NUMBER() OVER "
            f"(PARTITION BY {keys} ORDER BY {q(SEQ)} DESC) AS hw_rn FROM {table} "
            f"WHERE {q(OP)} <> 't'{floor}) hw_latest WHERE hw_rn = 1 AND hw_op <> 'd'")
