"""Every column type, synonym and attribute MySQL/MariaDB accept, parsed into MySqlColumn.

The cases live in ddl_corpus/columns.txt (one definition and its expected fields per entry).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.mysql.columns import MySqlColumn
from headwater.connectors.mysql.ddl import STRING_TYPES
from headwater.connectors.mysql.schema_catalog import MySqlSchema

CORPUS = Path(__file__).parent / "ddl_corpus" / "columns.txt"


def _entries() -> list[tuple[str, dict[str, Any]]]:
    lines: list[str] = []
    for raw in CORPUS.read_text().splitlines():
        if raw.startswith("#") or not raw.strip():
            continue
        if raw[0].isspace():  # continues the previous entry (after a line comment)
            lines[-1] += "\n" + raw
        else:
            lines.append(raw)
    out = []
    for line in lines:
        definition, expected = line.rsplit("||", 1)
        out.append((definition.strip(), ast.literal_eval(expected.strip())))
    return out


ENTRIES = _entries()


def test_corpus_is_large() -> None:
    assert len(ENTRIES) >= 150


@pytest.mark.parametrize(("definition", "expected"), ENTRIES,
                         ids=[e[0].split("\n")[0][:60] for e in ENTRIES])
def test_column(definition: str, expected: dict[str, Any]) -> None:
    schema = MySqlSchema()
    changes = schema.apply("CREATE DATABASE db CHARACTER SET utf8mb4", None)
    changes = schema.apply(f"CREATE TABLE db.t (a INT, {definition}\n)", None)
    assert [c.kind for c in changes] == ["CREATE"]
    table = schema.table("db", "t")
    assert table is not None
    fields = dict(expected)
    if fields["type_name"] in STRING_TYPES:
        fields.setdefault("charset", "utf8mb4")
    assert table.column("c") == MySqlColumn(name="c", **fields)
