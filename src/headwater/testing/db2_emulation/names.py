"""Db2's name folding, for the Db2 EMULATION: an unquoted name means its upper-case form.

Why: Db2 stores a name created unquoted in upper case (`customers` is CUSTOMERS) and a quoted
one as written (`"testSchema"."tablea"`), and the connector relies on it: it sends catalog
names unquoted when they have no lower-case letter and double-quoted otherwise
(Debezium's Db2ObjectNameQuoter).  PostgreSQL folds unquoted names to lower case instead.
So the emulation gives every object its Db2 catalog name as its PostgreSQL name, and
`fold` rewrites each unquoted identifier of a Db2 statement as its quoted upper-case form
before PostgreSQL sees it: `SELECT x FROM asncdc.ibmsnap_register` becomes
`SELECT "X" FROM "ASNCDC"."IBMSNAP_REGISTER"`, as Db2 reads it.

Telling identifiers from SQL words needs a list: `SQL_WORDS` holds the keywords, types and
built-in functions of the statements the connector and the tests send.  A word missing from
it is taken for a name and fails loudly on PostgreSQL ("column ... does not exist"), never
silently.  String literals and quoted identifiers pass unchanged.
"""

from __future__ import annotations

import re
from typing import Final

SQL_WORDS: Final = frozenset((
    "select", "from", "where", "and", "or", "not", "null", "is", "as", "case", "when", "then",
    "else", "end", "distinct", "all", "union", "join", "left", "right", "inner", "outer",
    "cross", "on", "using", "group", "by", "order", "asc", "desc", "having", "limit", "offset",
    "fetch", "first", "next", "rows", "row", "only", "over", "partition", "lead", "lag",
    "row_number", "rank", "max", "min", "count", "sum", "avg", "coalesce", "nullif", "cast",
    "upper", "lower", "current_database", "current_timestamp", "current_date", "now", "in",
    "exists", "between", "like", "escape", "true", "false", "insert", "into", "values",
    "update", "set", "delete", "truncate", "table", "create", "alter", "drop", "add", "column",
    "schema", "primary", "key", "foreign", "references", "unique", "constraint", "default",
    "check", "index", "if", "cascade", "restrict", "with", "recursive", "savepoint",
    "rollback", "release", "to", "commit", "begin", "transaction", "isolation", "level",
    "read", "committed", "uncommitted", "repeatable", "serializable", "smallint", "integer",
    "int", "bigint", "real", "double", "precision", "float", "decimal", "numeric", "dec",
    "char", "character", "varchar", "varying", "text", "clob", "blob", "binary", "varbinary",
    "bytea", "boolean", "date", "time", "timestamp", "zone", "without", "xml", "returning",
    "immediate",
))

_TOKEN: Final = re.compile(
    r"""(?P<string>'(?:[^']|'')*')
      | (?P<quoted>"(?:[^"]|"")*")
      | (?P<word>[A-Za-z_][A-Za-z0-9_$#@]*)
      | (?P<number>[0-9]+(?:\.[0-9]+)?)""",
    re.VERBOSE)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def fold(sql: str) -> str:
    """`sql` with every unquoted identifier quoted in its upper-case form (Db2's folding)."""

    def replace(match: re.Match[str]) -> str:
        word = match.group("word")
        if word is None or word.lower() in SQL_WORDS:
            return match.group(0)
        return _quoted(word.upper())

    return _TOKEN.sub(replace, sql)
