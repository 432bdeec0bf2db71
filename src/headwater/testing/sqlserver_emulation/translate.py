"""T-SQL to PostgreSQL for the SQL Server EMULATION: sqlglot (read='tsql', write='postgres')
plus the hand-written fixes sqlglot cannot do, each listed here with its reason.

1. `?` parameters are numbered before parsing (`@hwpN`): sqlglot moves `TOP (?)` to a trailing
   LIMIT, which would reorder positional parameters.
2. Three-part names lose their database (`[testDB].cdc.x` -> `cdc.x`): one PostgreSQL
   database stands for one SQL Server database, and PostgreSQL has no cross-database names.
3. `0x00` literals become bytea (sqlglot writes `x'00'`, a PostgreSQL *bit string*).
4. `TODATETIMEOFFSET(t, DATEPART(TZOFFSET, SYSDATETIMEOFFSET()))` becomes `t` (the emulation's
   times are the server's local time already; sqlglot has no PostgreSQL form for it).
5. A bracketed function name (`cdc.[fn_cdc_get_all_changes_<ci>]`) is set aside before
   parsing and put back quoted (`_FUNCTIONS`): sqlglot upper-cases and unquotes it, and a
   capture instance name may hold any character (`dbo_Order Items`).
6. `INFORMATION_SCHEMA.COLUMNS` reads `emu.tsql_columns`: the declared T-SQL types.
7. `SET TRANSACTION ISOLATION LEVEL SNAPSHOT` (unknown to sqlglot) is REPEATABLE READ, the
   PostgreSQL level with the same guarantee (a transaction-long consistent view).
8. In DDL, MONEY / SMALLMONEY become NUMERIC(19,4) / NUMERIC(10,4): sqlglot keeps MONEY,
   whose PostgreSQL values are locale-formatted text ('$12.50'); SQL Server's are decimals.
9. Types sqlglot writes as no PostgreSQL type or the wrong one (`_TYPES`): TINYINT (UTINYINT)
   is SMALLINT, BIT (a PostgreSQL bit string) is BOOLEAN, FLOAT (sqlglot: single precision)
   is DOUBLE PRECISION unless FLOAT(1-24), BINARY/VARBINARY/IMAGE are BYTEA, (N)VARCHAR(MAX)
   is TEXT, and TIME/DATETIME2/DATETIMEOFFSET(7) keep PostgreSQL's maximum precision, 6.
10. `REAL` is written FLOAT(24) before parsing (`REAL_WORD`): sqlglot reads REAL and FLOAT as
   one type, and SQL Server's REAL is FLOAT(24).
11. Key columns of PRIMARY KEY (...) lose the `NULLS FIRST` sqlglot gives them (PostgreSQL
   refuses an ordering there).
12. A trailing `OPTION(RECOMPILE)` query hint (incremental.snapshot.option.recompile) is
   dropped before parsing: PostgreSQL plans every statement it is sent anyway, and sqlglot
   drops the hint only with a warning.
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


_TYPE: Final = exp.DataType.Type
_BYTEA: Final = frozenset({_TYPE.BINARY, _TYPE.VARBINARY, _TYPE.IMAGE})
_TEMPORAL: Final = frozenset({_TYPE.TIME, _TYPE.DATETIME2, _TYPE.TIMESTAMPTZ})
_STRINGS: Final = frozenset({_TYPE.VARCHAR, _TYPE.NVARCHAR})
_FUNCTIONS: Final = re.compile(r"\[(fn_cdc_(?:[^\]]|\]\])*)\]\s*\(")
_RECOMPILE: Final = re.compile(r"\s+OPTION\s*\(\s*RECOMPILE\s*\)\s*$", re.IGNORECASE)
REAL_WORD: Final = re.compile(r"(?<![\[\"\w])REAL(?![\]\"\w])", re.IGNORECASE)


def _params(node: exp.DataType) -> list[str]:
    return [p.name.upper() for p in node.expressions]


def _data_type(node: exp.DataType) -> exp.Expression:
    """Fix 9: the PostgreSQL type of a T-SQL type sqlglot renders wrongly."""
    kind, params = node.this, _params(node)
    if kind in _MONEY:
        return exp.DataType.build(_MONEY[kind], dialect="postgres")
    if kind == _TYPE.UTINYINT:
        return exp.DataType.build("SMALLINT", dialect="postgres")
    if kind == _TYPE.BIT:
        return exp.DataType.build("BOOLEAN", dialect="postgres")
    if kind == _TYPE.FLOAT:
        single = bool(params) and params[0].isdigit() and int(params[0]) <= 24
        return exp.DataType.build("REAL" if single else "DOUBLE PRECISION", dialect="postgres")
    if kind in _BYTEA:
        return exp.DataType.build("BYTEA", dialect="postgres")
    if kind in _STRINGS and params == ["MAX"]:
        return exp.DataType.build("TEXT", dialect="postgres")
    if kind in _TEMPORAL and params and params[0].isdigit() and int(params[0]) > 6:
        return exp.DataType(this=kind, expressions=[exp.DataTypeParam(
            this=exp.Literal.number(6))])
    return node


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
        return node
    if isinstance(node, exp.Dot) and isinstance(node.this, exp.Dot) and isinstance(
            node.this.this, exp.Identifier):
        return exp.Dot(this=node.this.expression, expression=node.expression)
    if isinstance(node, exp.DataType):
        return _data_type(node)
    if isinstance(node, exp.Ordered) and isinstance(node.parent, exp.PrimaryKey):
        key: exp.Expression = node.this
        return key
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
    if tsql.lstrip()[:5].upper() in ("CREAT", "ALTER"):
        tsql = REAL_WORD.sub("FLOAT(24)", tsql)
    functions: list[str] = []

    def aside(match: re.Match[str]) -> str:
        functions.append(match.group(1).replace("]]", "]"))
        return f"hwfn{len(functions) - 1}("

    numbered, count = _number_parameters(_FUNCTIONS.sub(aside, _RECOMPILE.sub("", tsql)))
    tree = sqlglot.parse_one(numbered, read="tsql")
    tree = tree.transform(_fix)
    sql = tree.sql(dialect="postgres")
    for index, name in enumerate(functions):
        quoted = '"' + name.replace('"', '""') + '"'
        sql = re.compile(rf"\bhwfn{index}\(", re.I).sub(quoted.replace("\\", "\\\\") + "(", sql)
    if count:
        sql = sql.replace("%", "%%")
    sql = re.sub(r"[@$]hwp(\d+)", r"%(hwp\1)s", sql)
    return sql, count
