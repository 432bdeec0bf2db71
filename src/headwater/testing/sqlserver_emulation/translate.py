"""T-SQL to PostgreSQL for the SQL Server EMULATION: sqlglot (read='tsql', write='postgres')
plus the hand-written fixes sqlglot cannot do, each listed here with its reason.

1. `?` parameters are numbered before parsing (`@hwpN`): sqlglot moves `TOP (?)` to a trailing
   LIMIT, which would reorder positional parameters.
2. Three-part names lose their database (`[testDB].cdc.x` -> `cdc.x`): one PostgreSQL
   database stands for one SQL Server database, and PostgreSQL has no cross-database names.
3. `0x00` literals become bytea (sqlglot writes `x'00'`, a PostgreSQL *bit string*).
4. `TODATETIMEOFFSET(t, DATEPART(TZOFFSET, SYSDATETIMEOFFSET()))` becomes `t` (the emulation's
   times are the server's local time already; sqlglot has no PostgreSQL form for it).
5. Function names keep their case (sqlglot upper-cases a quoted table-valued function name).
6. `INFORMATION_SCHEMA.COLUMNS` reads `emu.tsql_columns`: the declared T-SQL types.
7. `SET TRANSACTION ISOLATION LEVEL SNAPSHOT` (unknown to sqlglot) is REPEATABLE READ, the
   PostgreSQL level with the same guarantee (a transaction-long consistent view).
8. In DDL, MONEY / SMALLMONEY become NUMERIC(19,4) / NUMERIC(10,4): sqlglot keeps MONEY,
   whose PostgreSQL values are locale-formatted text ('$12.50'); SQL Server's are decimals.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

import sqlglot
from sqlglot import exp

_ISOLATION: Final = re.compile(r"\s*SET\s+TRANSACTION\s+ISOLATION\s+LEVEL\s+(.+?)\s*;?\s*$",
                               re.IGNORECASE)
_LEVELS: Final = {"READ UNCOMMITTED": "READ UNCOMMITTED", "READ COMMITTED": "READ COMMITTED",
                  "REPEATABLE READ": "REPEATABLE READ", "SNAPSHOT": "REPEATABLE READ",
                  "SERIALIZABLE": "SERIALIZABLE"}

_MONEY: Final = {exp.DataType.Type.MONEY: "NUMERIC(19, 4)",
                 exp.DataType.Type.SMALLMONEY: "NUMERIC(10, 4)"}


def _number_parameters(sql: str) -> tuple[str, int]:
    out: list[str] = []
    count = 0
    in_string = False
    for char in sql:
        if char == "'":
            in_string = not in_string
        if char == "?" and not in_string:
            out.append(f"@hwp{count}")
            count += 1
        else:
            out.append(char)
    return "".join(out), count


def _fix(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Table):
        if node.args.get("catalog") is not None:
            node.set("catalog", None)
        if (node.name.upper() == "COLUMNS" and node.args.get("db") is not None
                and node.args["db"].name.upper() == "INFORMATION_SCHEMA"):
            node.set("this", exp.to_identifier("tsql_columns"))
            node.set("db", exp.to_identifier("emu"))
        this = node.this
        if isinstance(this, exp.Anonymous) and isinstance(this.this, exp.Identifier):
            this.set("this", this.this.name)
        return node
    if isinstance(node, exp.Dot) and isinstance(node.this, exp.Dot) and isinstance(
            node.this.this, exp.Identifier):
        return exp.Dot(this=node.this.expression, expression=node.expression)
    if isinstance(node, exp.DataType) and node.this in _MONEY:
        return exp.DataType.build(_MONEY[node.this], dialect="postgres")
    if isinstance(node, exp.HexString):
        return exp.cast(exp.Literal.string("\\x" + node.this), "bytea")
    if isinstance(node, exp.Anonymous) and str(node.this).upper() == "TODATETIMEOFFSET":
        first: exp.Expression = node.expressions[0]
        return _fix(first)
    return node


@lru_cache(maxsize=512)
def to_postgres(tsql: str) -> tuple[str, int]:
    """(PostgreSQL text with `%(hwpN)s` parameters, parameter count) of one T-SQL statement."""
    level = _ISOLATION.match(tsql)
    if level:
        name = _LEVELS[" ".join(level.group(1).upper().split())]
        return f"SET TRANSACTION ISOLATION LEVEL {name}", 0
    numbered, count = _number_parameters(tsql)
    tree = sqlglot.parse_one(numbered, read="tsql")
    tree = tree.transform(_fix)
    sql = tree.sql(dialect="postgres")
    if count:
        sql = sql.replace("%", "%%")
    sql = re.sub(r"[@$]hwp(\d+)", r"%(hwp\1)s", sql)
    return sql, count
