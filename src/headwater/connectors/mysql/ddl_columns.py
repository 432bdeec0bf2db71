"""Column definitions: a column's name, data type and attributes.

Column attributes may come in any order and most may repeat (the last one wins, as on the
server).  Clauses that do not change what a row holds (CHECK, REFERENCES, storage hints,
engine attributes) are read and dropped: they must parse, since one unread word fails the
whole statement, but the catalog has no use for them.
"""

from __future__ import annotations

from dataclasses import replace

from headwater.connectors.mysql.columns import MySqlColumn
from headwater.connectors.mysql.ddl_cursor import Cursor
from headwater.connectors.mysql.ddl_lexer import BITS, HEX, NUMBER, OP, QUOTED, STRING, WORD
from headwater.connectors.mysql.ddl_model import ColumnSpec
from headwater.connectors.mysql.ddl_types import (
    DECIMAL_SYNONYMS,
    DEFAULT_LENGTH,
    INTEGER_SYNONYMS,
    NATIONAL_TYPES,
    SIMPLE_TYPES,
    normalize_collation,
)

_TYPE_SCHEMAS = frozenset({"MARIADB_SCHEMA", "ORACLE_SCHEMA", "MAXDB_SCHEMA"})
# Clauses that may follow a column definition in ALTER TABLE without a comma.
_ATTRIBUTE_ENDS = frozenset({("REMOVE", "PARTITIONING"), ("PARTITION", "BY")})


def hex_text(literal: str) -> str:
    """The text of a hex literal (x'61' or 0x61), read as UTF-8 (latin1 if it is not)."""
    digits = literal[2:-1] if literal[:2].lower() == "x'" else literal[2:]
    data = bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin1")


# Column options that take a value and mean nothing to the catalog.
_VALUED_COLUMN_OPTIONS = frozenset({
    "COLUMN_FORMAT", "STORAGE", "SRID", "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE",
    "REF_SYSTEM_ID",
})
_FLAG_COLUMN_OPTIONS = frozenset({"VIRTUAL", "STORED", "PERSISTENT", "VISIBLE", "INVISIBLE"})


class ColumnParser(Cursor):
    """Reads column definitions."""

    __slots__ = ()

    # -- columns -------------------------------------------------------------------------------
    def column_definition(self) -> ColumnSpec:
        name = self.qualified_name("column name")  # t.c and db.t.c name the column c
        return self.column_attributes(self.data_type(name))

    def data_type(self, name: str) -> ColumnSpec:
        token = self.peek()
        if token.kind != WORD:
            raise self.error(f"expected a data type for column {name!r}")
        self.i += 1
        word = token.upper
        if word in _TYPE_SCHEMAS and self.at_op(".") and self.peek(1).kind == WORD:
            self.i += 1  # mariadb_schema.date: the type as in the default sql_mode
            token = self.next()
            word = token.upper
        members: tuple[str, ...] = ()
        length: int | None = None
        scale: int | None = None
        charset: str | None = None
        declared: int | None = None
        binary = False
        serial = False
        if word in INTEGER_SYNONYMS:
            type_name = INTEGER_SYNONYMS[word]
            length, _ = self.type_args()
        elif word in DECIMAL_SYNONYMS:
            type_name = "DECIMAL"
            length, scale = self.type_args()
            if length is None:
                length, scale = 10, 0
            elif scale is None:
                scale = 0
        elif word in ("FLOAT", "FLOAT4"):
            type_name = "FLOAT"
            length, scale = self.type_args()
            if length is not None and scale is None:  # FLOAT(p): precision in bits
                type_name = "DOUBLE" if length > 24 else "FLOAT"
                length = None
        elif word in ("DOUBLE", "REAL", "FLOAT8"):
            if word == "DOUBLE":
                self.accept("PRECISION")
            type_name = "DOUBLE"
            length, scale = self.type_args()
        elif word in ("NCHAR", "NVARCHAR", "NATIONAL"):
            type_name = self.national_type(word)
            length, _ = self.type_args()
            charset = "utf8mb3"
            if type_name + " BINARY" in NATIONAL_TYPES and self.accept("BINARY"):
                type_name += " BINARY"
                binary = True
        elif word in ("CHAR", "CHARACTER", "VARCHAR", "VARCHARACTER"):
            varying = word.startswith("VARCHAR") or bool(self.accept("VARYING"))
            type_name = "VARCHAR" if varying else "CHAR"
            length, _ = self.type_args()
            if not varying and self.accept("BYTE"):
                type_name = "BINARY"
        elif word == "LONG":
            if self.accept("VARBINARY") or self.accept("BINARY"):
                type_name = "MEDIUMBLOB"
            else:
                self.accept("VARCHAR") or self.accept("CHAR", "VARYING") or \
                    self.accept("CHARACTER", "VARYING")
                type_name = "MEDIUMTEXT"
        elif word in ("ENUM", "SET"):
            type_name = word
            members = self.members()
        elif word == "SERIAL":
            type_name = "BIGINT"
            serial = True
        elif word in SIMPLE_TYPES:
            type_name = SIMPLE_TYPES[word]
            length, scale = self.type_args()
            if type_name in ("TEXT", "BLOB") and length is not None:
                declared, length = length, None
        else:
            self.i -= 1
            raise self.error(f"unknown data type {token.value!r} for column {name!r}")
        if length is None and type_name in DEFAULT_LENGTH:
            length = DEFAULT_LENGTH[type_name]
        if type_name == "BIT" and length == 0:
            length = 1  # BIT(0) is BIT(1) to the server
        if length is None and type_name in NATIONAL_TYPES and \
                NATIONAL_TYPES[type_name] == "CHAR":
            length = 1
        column = MySqlColumn(name, type_name, length=length, scale=scale, charset=charset,
                             members=members)
        spec = ColumnSpec(column, declared_length=declared, binary_collation=binary)
        if serial:
            spec = replace(spec, unique=True, column=replace(
                column, unsigned=True, nullable=False, auto_increment=True, generated=True))
        return spec

    def national_type(self, word: str) -> str:
        """The national type's name as Debezium spells it (its keywords, in order)."""
        if word == "NVARCHAR":
            return "NVARCHAR"
        if word == "NCHAR":
            second = self.accept_any("VARYING", "VARCHAR")
            return f"NCHAR {second}" if second else "NCHAR"
        second = self.accept_any("CHAR", "CHARACTER", "VARCHAR")
        if second is None:
            raise self.error("expected CHAR or VARCHAR after NATIONAL")
        if second != "VARCHAR" and self.accept("VARYING"):
            return f"NATIONAL {second} VARYING"
        return f"NATIONAL {second}"

    def type_args(self) -> tuple[int | None, int | None]:
        """(M) or (M,D).  MariaDB also takes a decimal number as M (decimal(19.5)) and uses its
        whole part."""
        if not self.at_op("("):
            return None, None
        self.i += 1
        length = self.size()
        scale = None
        if self.accept_op(","):
            scale = self.size()
        self.expect_op(")")
        return length, scale

    def size(self) -> int:
        token = self.peek()
        if token.kind == NUMBER and token.value.replace(".", "", 1).isdigit():
            self.i += 1
            return int(float(token.value))
        return self.number()

    def members(self) -> tuple[str, ...]:
        """ENUM/SET members; the server drops their trailing spaces."""
        self.expect_op("(")
        out = [self.member()]
        while self.accept_op(","):
            out.append(self.member())
        self.expect_op(")")
        return tuple(m.rstrip(" ") for m in out)

    def member(self) -> str:
        token = self.peek()
        if token.kind == HEX:
            self.i += 1
            return hex_text(token.value)
        return self.string("ENUM/SET member")

    def column_attributes(self, spec: ColumnSpec) -> ColumnSpec:
        column = spec.column
        changes: dict[str, object] = {}
        primary = spec.primary_key
        unique = spec.unique
        binary = False
        row_end = spec.row_end
        while True:
            token = self.peek()
            if self.at_engine_option():  # `name`=value: a storage engine's column option
                self.i += 1
                self.option_value()
                continue
            if token.kind != WORD:
                break
            word = token.upper
            if word in ("FIRST", "AFTER") or (word, self.peek(1).upper) in _ATTRIBUTE_ENDS:
                break
            self.i += 1
            if word == "NOT":
                if self.accept("NULL"):
                    changes["nullable"] = False
                elif not self.accept("SECONDARY"):
                    raise self.error("expected NULL or SECONDARY after NOT")
            elif word == "NULL":
                changes["nullable"] = True
            elif word == "DEFAULT":
                changes["default"] = self.default_value()
            elif word == "ON":
                self.expect("UPDATE")
                self.default_value()
            elif word == "AUTO_INCREMENT":  # the server makes the column NOT NULL
                changes.update(auto_increment=True, generated=True, nullable=False)
            elif word == "UNIQUE":
                self.accept("KEY")
                unique = True
            elif word == "PRIMARY":
                self.expect("KEY")
                primary = True
            elif word == "KEY":
                primary = True
            elif word == "COMMENT":
                self.accept_op("=")
                changes["comment"] = self.string("comment")
            elif word == "COLLATE":
                if not self.accept("DEFAULT"):  # DEFAULT: the table's
                    changes["collation"] = normalize_collation(self.option_value())
            elif (word in ("CHARACTER", "CHAR") and self.accept("SET")) or word == "CHARSET":
                if not self.accept("DEFAULT"):
                    changes["charset"] = self.charset_name()
            elif word == "ASCII":
                changes["charset"] = "latin1"
            elif word == "UNICODE":
                changes["charset"] = "ucs2"
            elif word == "BYTE":
                changes["charset"] = "binary"
            elif word == "BINARY":
                binary = True
            elif word == "UNSIGNED":
                changes["unsigned"] = True
            elif word == "SIGNED":
                changes["unsigned"] = False
            elif word == "ZEROFILL":
                changes["zerofill"] = True
                changes["unsigned"] = True
            elif word in ("GENERATED", "AS"):
                if word == "GENERATED":
                    self.expect("ALWAYS")
                    self.expect("AS")
                if self.accept("ROW"):  # a system-versioning period column: NOT NULL
                    edge = self.accept_any("START", "END")
                    if edge is None:
                        raise self.error("expected START or END")
                    changes["nullable"] = False
                    row_end = edge == "END"
                else:
                    self.skip_parens()
            elif word in _FLAG_COLUMN_OPTIONS:
                pass
            elif word == "CONSTRAINT":
                if not self.at("CHECK"):
                    self.identifier()
                self.expect("CHECK")
                self.check_body()
            elif word == "CHECK":
                self.check_body()
            elif word == "REFERENCES":
                self.references_body()
            elif word in _VALUED_COLUMN_OPTIONS:
                self.option_value()
            elif word == "COMPRESSED":
                if self.at_op("="):
                    self.option_value()
            elif word == "SERIAL":
                self.expect("DEFAULT", "VALUE")
                changes.update(nullable=False, auto_increment=True, generated=True)
                unique = True
            elif word in ("WITH", "WITHOUT"):
                self.expect("SYSTEM", "VERSIONING")
            elif self.at_op("="):  # an engine-defined column option (MariaDB)
                self.option_value()
            else:
                self.i -= 1
                raise self.error(f"unexpected {token.value!r} in the definition of column "
                                 f"{column.name!r}")
        if primary:
            changes["nullable"] = False
        if changes:
            column = replace(column, **changes)  # type: ignore[arg-type]
        return replace(spec, column=column, primary_key=primary, unique=unique,
                       binary_collation=spec.binary_collation or binary, row_end=row_end)

    def default_value(self) -> str | None:
        token = self.peek()
        if token.kind == OP and token.value == "(":
            return self.skip_parens()
        if token.kind == OP and token.value in ("-", "+") and self.peek(1).kind == NUMBER:
            self.i += 2
            digits = self.tokens[self.i - 1].value
            return "-" + digits if token.value == "-" else digits
        if token.kind == STRING or (token.kind == WORD and self.peek(1).kind == STRING and (
                token.value.startswith("_") or token.upper == "N")):
            return self.string()
        if token.kind in (NUMBER, HEX, BITS):
            self.i += 1
            return token.value
        if token.kind == WORD and token.value.startswith("_") and self.peek(1).kind == HEX:
            self.i += 2  # a charset introducer before a hex literal
            return self.tokens[self.i - 1].value
        if token.kind == WORD and token.upper == "CASE":
            self.skip_case()
            return self.source(token, self.tokens[self.i - 1])
        if token.kind == WORD:
            if token.upper in ("DATE", "TIME", "TIMESTAMP") and self.peek(1).kind == STRING:
                self.i += 1
                return self.string()
            if self.at_seq("NEXT", "VALUE", "FOR") or self.at_seq("PREVIOUS", "VALUE", "FOR"):
                self.i += 3
                self.qualified_name("sequence name")
                return self.source(token, self.tokens[self.i - 1])
            self.i += 1
            if token.upper == "NULL":
                return None
            if self.at_op("("):
                self.skip_parens()
            elif self.at_op(".") and self.peek(1).kind in (WORD, QUOTED):
                self.i += 2  # a qualified function name (db.f())
                if self.at_op("("):
                    self.skip_parens()
            return self.source(token, self.tokens[self.i - 1])
        raise self.error("expected a default value")

    def skip_case(self) -> None:
        """CASE ... END, nested CASEs included."""
        depth = 0
        while not self.at_end():
            token = self.next()
            if token.kind == WORD and token.upper == "CASE":
                depth += 1
            elif token.kind == WORD and token.upper == "END":
                depth -= 1
                if depth == 0:
                    return
            elif token.kind == OP and token.value == "(":
                self.i -= 1
                self.skip_parens()
        raise self.error("expected END")

    def check_body(self) -> None:
        self.skip_parens()
        if self.accept("NOT", "ENFORCED"):
            return
        self.accept("ENFORCED")

    def references_body(self) -> None:
        self.table_name()
        if self.at_op("("):
            self.skip_parens()
        while True:
            if self.accept("MATCH"):
                self.identifier()
            elif self.accept("ON"):
                if not self.accept("DELETE"):
                    self.expect("UPDATE")
                if self.accept("SET"):
                    if not self.accept("NULL"):
                        self.expect("DEFAULT")
                elif self.accept("NO"):
                    self.expect("ACTION")
                elif not (self.accept("RESTRICT") or self.accept("CASCADE")):
                    raise self.error("expected a referential action")
            else:
                return
