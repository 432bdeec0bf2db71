"""Per-chunk signatures and canonical rows of a source table, computed by the database.

A 100M-row table is hashed by one grouped scan in SQL: nothing but one (chunk, count, sum)
row per chunk comes back.  Chunks are key ranges (`floor(key / chunk_rows)`) for a single
integer key, else buckets of an MD5 of the key text; a keyless table is one chunk.  The row
hash is the first 60 bits of the MD5 of the row's canonical text; a chunk's signature is its
row count and the sum of its row hashes (order-independent, so the target can be hashed by an
unordered streaming scan).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from headwater.validate.canonical import sql_text
from headwater.validate.model import Signature, TablePlan


class SqlSource:
    """A PostgreSQL or MariaDB connection (DB-API) and its dialect.

    It reads the plan's source table, or, given `relation`, what that returns for a plan (a
    JDBC target's current rows as a derived table: the target side hashed by its database)."""

    def __init__(self, conn: Any, dialect: str,
                 relation: Callable[[TablePlan], str] | None = None) -> None:
        self.conn = conn
        self.dialect = dialect
        self.relation = relation

    def q(self, name: str) -> str:
        if self.dialect == "postgres":
            return '"' + name.replace('"', '""') + '"'
        return "`" + name.replace("`", "``") + "`"

    def table_ref(self, plan: TablePlan) -> str:
        if self.relation is not None:
            return self.relation(plan)
        return f"{self.q(plan.schema)}.{self.q(plan.table)}"

    def _concat(self, exprs: list[str]) -> str:
        sep = "chr(31)" if self.dialect == "postgres" else "CHAR(31)"
        return f"CONCAT_WS({sep}, {', '.join(exprs)})" if len(exprs) > 1 else exprs[0]

    def _hash60(self, text: str) -> str:
        if self.dialect == "postgres":
            return f"('x' || lpad(substr(md5({text}), 1, 15), 16, '0'))::bit(64)::bigint"
        return f"CAST(CONV(SUBSTR(MD5({text}), 1, 15), 16, 10) AS UNSIGNED)"

    def chunk_expr(self, plan: TablePlan, chunk_rows: int, buckets: int) -> str:
        if not plan.key:
            return "0"
        if plan.int_key:
            k = self.q(plan.key[0])
            if self.dialect == "postgres":
                return f"floor({k}::numeric / {chunk_rows})::bigint"
            return f"FLOOR({k} / {chunk_rows})"
        key_text = self._concat([sql_text(self.dialect, kind, self.q(c))
                                 for c, kind in plan.columns[:len(plan.key)]])
        if self.dialect == "postgres":
            return (f"(('x' || lpad(substr(md5({key_text}), 1, 7), 8, '0'))::bit(32)::int "
                    f"% {buckets})")
        return f"(CONV(SUBSTR(MD5({key_text}), 1, 7), 16, 10) % {buckets})"

    def row_text(self, plan: TablePlan) -> str:
        return self._concat([sql_text(self.dialect, kind, self.q(c)) for c, kind in plan.columns])

    def count(self, plan: TablePlan) -> int:
        with self.conn.cursor() as cur:
            cur.execute(f"SELECT count(*) FROM {self.table_ref(plan)}")
            return int(cur.fetchone()[0])

    def signatures(self, plan: TablePlan, chunk_rows: int, buckets: int,
                   only: set[int] | None = None) -> dict[int, Signature]:
        chunk = self.chunk_expr(plan, chunk_rows, buckets)
        where = ""
        if only is not None:
            where = f" WHERE {chunk} IN ({', '.join(str(c) for c in sorted(only))})"
        sql = (f"SELECT {chunk} AS c, count(*), sum({self._hash60(self.row_text(plan))}) "
               f"FROM {self.table_ref(plan)}{where} GROUP BY 1")
        with self.conn.cursor() as cur:
            cur.execute(sql)
            return {int(c): Signature(int(n), int(s or 0)) for c, n, s in cur.fetchall()}

    def rows(self, plan: TablePlan, chunk_rows: int, buckets: int,
             chunks: set[int]) -> Iterator[tuple[str, ...]]:
        """The canonical texts of the rows of `chunks` (columns in `plan.columns` order)."""
        chunk = self.chunk_expr(plan, chunk_rows, buckets)
        texts = ", ".join(sql_text(self.dialect, kind, self.q(c)) for c, kind in plan.columns)
        sql = (f"SELECT {texts} FROM {self.table_ref(plan)} "
               f"WHERE {chunk} IN ({', '.join(str(c) for c in sorted(chunks))})")
        with self.conn.cursor() as cur:
            cur.execute(sql)
            while batch := cur.fetchmany(10_000):
                for row in batch:
                    yield tuple(str(v) for v in row)
