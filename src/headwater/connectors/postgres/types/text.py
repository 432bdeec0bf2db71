"""Types carried as text: strings, network addresses, ranges, uuid, json(b), xml, tsvector,
ltree, citext, isbn, hstore, enums, and the fallback for every type not mapped anywhere."""

from __future__ import annotations

from typing import Any

from headwater.connectors.postgres.types.base import Factory, PgType, named_string, simple
from headwater.connectors.postgres.types.oids import (
    BPCHAR_OID,
    CHAR_OID,
    CIDR_OID,
    DATERANGE_OID,
    INET_OID,
    INT4RANGE_OID,
    INT8RANGE_OID,
    JSON_OID,
    JSONB_OID,
    MACADDR8_OID,
    MACADDR_OID,
    NAME_OID,
    NUMRANGE_OID,
    TEXT_OID,
    TSRANGE_OID,
    TSTZRANGE_OID,
    TSVECTOR_OID,
    UUID_OID,
    VARCHAR_OID,
    XML_OID,
)
from headwater.convert import (
    ColumnMapping,
    TypeModes,
    binary_encoder,
    binary_fallback,
    binary_schema,
)
from headwater.convert.pg_hstore import hstore_json, parse_hstore
from headwater.model.schema import MAP, STRING, ConnectSchema

UUID_NAME = "io.debezium.data.Uuid"
JSON_NAME = "io.debezium.data.Json"
XML_NAME = "io.debezium.data.Xml"
LTREE_NAME = "io.debezium.data.Ltree"
TSVECTOR_NAME = "io.debezium.data.Tsvector"  # sic: TsVector.LOGICAL_NAME
ENUM_NAME = "io.debezium.data.Enum"

_HSTORE_MAP_KEYS = ConnectSchema(STRING, False)
_HSTORE_MAP_VALUES = ConnectSchema(STRING, True)


def _hstore(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    if modes.hstore_handling_mode == "map":
        schema = ConnectSchema(MAP, optional, keys=_HSTORE_MAP_KEYS, values=_HSTORE_MAP_VALUES)
        return ColumnMapping(schema, parse_hstore, {})
    return ColumnMapping(ConnectSchema(STRING, optional, JSON_NAME, 1), hstore_json, "{}")


def _identity(text: str) -> str:
    return text


def enum_mapping(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    """An enum type's mapping: enums are chosen by ``typtype``, not by OID or name."""
    schema = ConnectSchema(STRING, optional, ENUM_NAME, 1, {"allowed": ",".join(t.enum_labels)})
    return ColumnMapping(schema, _identity, "")


def unknown_mapping(optional: bool, modes: TypeModes) -> ColumnMapping:
    """The mapping of a type Headwater does not map (see the package docstring)."""
    if not modes.include_unknown_datatypes:
        return ColumnMapping(ConnectSchema(STRING, optional), _identity, "", supported=False)
    mode = modes.binary_handling_mode
    encode = binary_encoder(mode)

    def opaque(text: str) -> Any:
        return encode(text.encode("utf-8"))

    return ColumnMapping(binary_schema(mode, optional), opaque, binary_fallback(mode))


_string = simple(STRING, str, "")
_uuid = named_string(UUID_NAME)
_json = named_string(JSON_NAME)
_xml = named_string(XML_NAME)
_ltree = named_string(LTREE_NAME)
_tsvector = named_string(TSVECTOR_NAME)

BY_OID: dict[int, Factory] = {
    CHAR_OID: _string,
    NAME_OID: _string,
    TEXT_OID: _string,
    JSON_OID: _json,
    XML_OID: _xml,
    CIDR_OID: _string,
    MACADDR8_OID: _string,
    MACADDR_OID: _string,
    INET_OID: _string,
    BPCHAR_OID: _string,
    VARCHAR_OID: _string,
    UUID_OID: _uuid,
    TSVECTOR_OID: _tsvector,
    JSONB_OID: _json,
    INT4RANGE_OID: _string,
    NUMRANGE_OID: _string,
    TSRANGE_OID: _string,
    TSTZRANGE_OID: _string,
    DATERANGE_OID: _string,
    INT8RANGE_OID: _string,
}

BY_NAME: dict[str, Factory] = {
    # extension types (Debezium's TypeRegistry looks these up by name as well)
    "hstore": _hstore,
    "ltree": _ltree,
    "citext": _string,
    "isbn": _string,
    # built-in types
    "char": _string,  # typname of "char" (OID 18)
    "name": _string,
    "text": _string,
    "json": _json,
    "jsonb": _json,
    "xml": _xml,
    "cidr": _string,
    "inet": _string,
    "macaddr": _string,
    "macaddr8": _string,
    "bpchar": _string,
    "character": _string,
    "varchar": _string,
    "character varying": _string,
    "uuid": _uuid,
    "tsvector": _tsvector,
    "int4range": _string,
    "int8range": _string,
    "numrange": _string,
    "tsrange": _string,
    "tstzrange": _string,
    "daterange": _string,
}
