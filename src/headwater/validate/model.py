"""What a validation compares and what it found (plain data, rendered as text or JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class TablePlan:
    """One source table and its target: the key and compared columns with their kinds."""

    schema: str
    table: str
    target: str  # the Delta table's path, or the JDBC target's schema.table
    key: tuple[str, ...]  # empty: keyless
    columns: tuple[tuple[str, str], ...]  # (name, canonical kind), key columns first
    int_key: bool  # one integer key column: chunks are key ranges
    not_compared: tuple[str, ...] = ()  # "column (reason)"
    mode: str = "scd1"  # the pipeline mode that wrote the target: which rows are current

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"


@dataclass(frozen=True, slots=True)
class Signature:
    rows: int
    hash_sum: int


@dataclass(slots=True)
class RowDiff:
    key: dict[str, str]
    kind: str  # missing (in source, not in target), extra (in target only), changed
    columns: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> source/target

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "kind": self.kind}
        if self.columns:
            out["columns"] = self.columns
        return out


@dataclass(slots=True)
class TableResult:
    plan: TablePlan
    source_rows: int = 0
    target_rows: int = 0
    chunks: int = 0
    differing_chunks: list[int] = field(default_factory=list)
    rows: list[RowDiff] = field(default_factory=list)
    truncated: bool = False  # more differing rows than were listed
    problem: str | None = None  # the table could not be compared (why)

    @property
    def equal(self) -> bool:
        return (self.problem is None and not self.differing_chunks
                and self.source_rows == self.target_rows)

    def as_dict(self) -> dict[str, Any]:
        return {
            "table": self.plan.name, "target": self.plan.target, "mode": self.plan.mode,
            "key": list(self.plan.key), "equal": self.equal,
            "source_rows": self.source_rows, "target_rows": self.target_rows,
            "chunks": self.chunks, "differing_chunks": self.differing_chunks,
            "rows": [r.as_dict() for r in self.rows], "rows_truncated": self.truncated,
            "compared_columns": [c for c, _ in self.plan.columns],
            "not_compared": list(self.plan.not_compared), "problem": self.problem,
        }
