"""MariaDB forms the server accepts that the parser once refused or misread (issue 30): storage
engine options written as quoted names, ALTER INDEX IF EXISTS ... [NOT] IGNORED, and string
literals mixing backslash escapes with doubled quotes.  Each statement here was run on MariaDB
10.11; the integration corpus (tests/integration/mysql/ddl_corpus) generates the same families
and compares the parser's tables with the server's."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headwater.connectors.mysql.columns import MySqlTable
from headwater.connectors.mysql.ddl import DdlParseError
from headwater.connectors.mysql.ddl_lexer import STRING, tokenize
from headwater.connectors.mysql.schema_catalog import MySqlSchema


def _schema(*statements: str) -> MySqlSchema:
    schema = MySqlSchema()
    schema.apply("CREATE DATABASE db CHARACTER SET utf8mb4", None)
    for statement in statements:
        schema.apply(statement, "db")
    return schema


def _table(schema: MySqlSchema, name: str = "t") -> MySqlTable:
    table = schema.table("db", name)
    assert table is not None
    return table


@pytest.mark.parametrize("options", [
    "`PAGE_COMPRESSED`=`ON`", "`PAGE_COMPRESSED`='ON'", "`PAGE_COMPRESSED`=1",
    "`PAGE_COMPRESSED`=1 `PAGE_COMPRESSION_LEVEL`=9", "`page_compressed` = `yes`",
    "`PAGE_COMPRESSED`=DEFAULT", "ENGINE=InnoDB, `PAGE_COMPRESSED`=1, COMMENT 'kept'",
    "PAGE_COMPRESSED=1", "`PAGE_COMPRESSION_LEVEL`=9", "`ENCRYPTED`=YES `ENCRYPTION_KEY_ID`=2",
    "ENCRYPTED=NO ENCRYPTION_KEY_ID=1 COMMENT = 'kept'",
    "WITH SYSTEM VERSIONING `PAGE_COMPRESSED`=1 COMMENT 'kept'",
    "ENGINE=CSV `IETF_QUOTES`=YES COMMENT 'kept'",
])
def test_quoted_engine_table_options_are_read_and_the_rest_kept(options: str) -> None:
    table = _table(_schema(f"CREATE TABLE t (a INT NOT NULL) {options}"))
    assert [c.name for c in table.columns] == ["a"]
    assert table.comment == ("kept" if "kept" in options else None)


def test_quoted_engine_options_in_alter_table_keep_the_other_actions() -> None:
    schema = _schema("CREATE TABLE t (a INT)",
                     "ALTER TABLE t `PAGE_COMPRESSED`=0, `PAGE_COMPRESSION_LEVEL`=DEFAULT, "
                     "COMMENT 'c', ADD b INT")
    table = _table(schema)
    assert [c.name for c in table.columns] == ["a", "b"]
    assert table.comment == "c"


def test_engine_options_of_columns_and_keys() -> None:
    """Under IGNORE_BAD_TABLE_OPTIONS the server keeps any `name`=value on a column or key
    and prints it quoted in SHOW CREATE TABLE."""
    table = _table(_schema(
        "CREATE TABLE t (a INT `FOO`='1' COMMENT 'c' NOT NULL, b INT, "
        "UNIQUE KEY u (a) `CLUSTERING`='YES', KEY j (b) CLUSTERING=YES COMMENT 'k')"))
    assert table.column("a").comment == "c"
    assert not table.column("a").nullable
    assert table.unique_keys == (("a",),)


@pytest.mark.parametrize("action", [
    "ALTER INDEX IF EXISTS i IGNORED", "ALTER KEY IF EXISTS i NOT IGNORED",
    "ALTER INDEX IF EXISTS missing IGNORED", "ALTER INDEX i NOT IGNORED",
    "ALTER INDEX IF EXISTS i NOT IGNORED, ALTER KEY IF EXISTS i IGNORED, ADD c INT",
])
def test_index_visibility_alters(action: str) -> None:
    schema = _schema("CREATE TABLE t (a INT, b INT, KEY i (a) IGNORED)",
                     f"ALTER TABLE t {action}")
    names = [c.name for c in _table(schema).columns]
    assert names == (["a", "b", "c"] if "ADD c" in action else ["a", "b"])


@pytest.mark.parametrize(("statement", "offset"), [
    ("ALTER TABLE t ALTER INDEX IF EXISTS i HIDDEN", 38),
    ("CREATE TABLE t2 (a INT) `PAGE_COMPRESSED`", 24),
    ("CREATE TABLE t2 (a INT `FOO`)", 23),
])
def test_what_cannot_be_read_stops_with_the_statement_and_position(statement: str,
                                                                   offset: int) -> None:
    schema = _schema("CREATE TABLE t (a INT, KEY i (a))")
    with pytest.raises(DdlParseError) as caught:
        schema.apply(statement, "db")
    assert caught.value.position == offset
    assert statement in str(caught.value)


@pytest.mark.parametrize(("literal", "value"), [
    ("'a''''b'", "a''b"), ('"x""""y"', 'x""y'), ("'\\'\\''", "''"), ("'\\\\'''''", "\\''"),
    ("'\\''''", "''"), ("'''\\''", "''"), ("'\"\"'", '""'), ('"\'\'"', "''"),
    ("'a\\nb\\%'", "a\nb\\%"), ("''''''", "''"),
])
def test_string_literals_as_the_server_reads_them(literal: str, value: str) -> None:
    """The values are what MariaDB 10.11 stores as the column comment."""
    table = _table(_schema(f"CREATE TABLE t (a INT COMMENT {literal})"))
    assert table.columns[0].comment == value


_ESCAPED = {"\0": "\\0", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1a": "\\Z", "\b": "\\b",
            "\\": "\\\\"}


@st.composite
def _literal(draw: st.DrawFn) -> tuple[str, str]:
    """A string and one of the ways MySQL lets it be written: each quote doubled or
    backslash-escaped, the other quote as is or escaped, special characters escaped."""
    quote = draw(st.sampled_from("'\""))
    value = draw(st.text(alphabet=st.sampled_from("ab'\"\\\n\t\0% _"), max_size=12))
    pieces = []
    for char in value:
        if char == quote:
            pieces.append(draw(st.sampled_from([quote * 2, "\\" + quote])))
        elif char in "'\"":
            pieces.append(draw(st.sampled_from([char, "\\" + char])))
        elif char in _ESCAPED:
            pieces.append(_ESCAPED[char] if char == "\\" or draw(st.booleans()) else char)
        else:
            pieces.append(char)
    return quote + "".join(pieces) + quote, value


@given(_literal())
def test_any_written_string_reads_back(written: tuple[str, str]) -> None:
    literal, value = written
    tokens = tokenize(f"COMMENT {literal}")
    assert (tokens[1].kind, tokens[1].value) == (STRING, value)
    assert tokens[2].kind == "eof"
