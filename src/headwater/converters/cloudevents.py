"""Debezium's `io.debezium.converters.CloudEventsConverter`, JSON serializer and JSON data.

A change event becomes a CloudEvents 1.0 document: `id` (the connector's position, as each
connector's CloudEventsMaker spells it), `source` (`/debezium/<connector>/<name>`),
`specversion`, `type` (`io.debezium.connector.<connector>.DataChangeEvent`), `time` (the
source's `ts_ms`, `yyyy-MM-dd'T'HH:mm:ss.SSSXXX` in UTC), `datacontenttype`, the extension
attributes (`iodebeziumop`, one `iodebezium<field>` per source field with INT64 values as
strings, `iodebeziumtx*` from the transaction block) and `data`: a struct named
`io.debezium.connector.<connector>.Data` holding `before`/`after` (MongoDB: also
`updateDescription`; MariaDB: every envelope field), written by a JsonConverter configured
from the `json.*` properties (`json.schemas.enable` defaults to true, so `data` carries
`schema` and `payload`).  The outer document never has a schema wrapper: Debezium forces
`schemas.enable=false` on it.

As in Debezium, a record whose value is not a change-event envelope (a heartbeat, a
transaction or schema-change event, a tombstone) is written as null, and a connector without a
CloudEvents maker fails the record.  Avro serialization, metadata from headers and the
OpenTelemetry `traceparent` attribute are refused at start.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import orjson

from headwater.connect.props import PluginConfigError, PluginProps
from headwater.connect.record import TransformError, field_schema, java_string
from headwater.converters.json import JsonConverter
from headwater.model.schema import (
    BOOLEAN,
    INT8,
    INT16,
    INT32,
    INT64,
    NO_DEFAULT,
    STRING,
    STRUCT,
    ConnectField,
    ConnectSchema,
)
from headwater.transforms.extract_new_state import is_envelope
from headwater.transforms.names import MODES

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_DEFAULT_METADATA_SOURCE = ("value", "id:generate", "type:generate", "traceparent:header",
                            "dataSchemaName:generate")
# connector name -> (source fields of the id, in order, with their labels; data fields or
# None for every envelope field).  From Debezium 3.x's <Connector>CloudEventsMaker classes.
_MAKERS: dict[str, tuple[tuple[tuple[str, str], ...], tuple[str, ...] | None]] = {
    "postgresql": ((("name", "name"), ("lsn", "lsn"), ("txId", "txId"),
                    ("sequence", "sequence")), ("before", "after")),
    "mysql": ((("name", "name"), ("file", "file"), ("pos", "pos")), ("before", "after")),
    "mariadb": ((("name", "name"), ("file", "file"), ("pos", "pos")), None),
    "mongodb": ((("name", "name"), ("ts", "ts_ms"), ("ord", "ord")),
                ("before", "after", "updateDescription")),
    "sqlserver": ((("name", "name"), ("change_lsn", "change_lsn"),
                   ("commit_lsn", "commit_lsn"), ("event_serial_no", "event_serial_no")),
                  ("before", "after")),
    "oracle": ((("name", "name"), ("scn", "scn"), ("commit_scn", "commit_scn"),
                ("lcr_position", "lcr_position")), ("before", "after")),
}
_TX_FIELDS = (("id", STRING), ("total_order", INT64), ("data_collection_order", INT64))


def extension_name(original: str) -> str:
    """`iodebezium` + the name's ASCII letters and digits (CloudEvents attribute names)."""
    return "iodebezium" + "".join(c for c in original if c.isascii() and c.isalnum())


def _get(schema: ConnectSchema, value: dict[str, Any], name: str) -> Any:
    """Kafka's `Struct.get`: a null field takes its schema default."""
    v = value.get(name)
    if v is None:
        fs = field_schema(schema, name)
        if fs is not None and fs.default is not NO_DEFAULT:
            return fs.default
    return v


def _extension_value(schema: ConnectSchema, value: Any, name: str) -> Any:
    if schema.type in (INT8, INT16, INT32, BOOLEAN, STRING):
        return value
    if schema.type == INT64:
        return None if value is None else str(value)
    raise TransformError(f"Source field of type {schema.type} cannot be converted into "
                         f"CloudEvents extension attribute ({name}).")


def _time(ts_ms: Any) -> str:
    if not isinstance(ts_ms, int):
        raise TransformError("CloudEvents: the source block has no ts_ms")
    moment = _EPOCH + dt.timedelta(milliseconds=ts_ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class CloudEventsConverter:
    """`from_connect` of Debezium's CloudEventsConverter (JSON/JSON)."""

    def __init__(self, p: PluginProps) -> None:
        kinds = {"serializer.type": p.choice("serializer.type", ("json", "avro"), "json"),
                 "data.serializer.type": p.choice("data.serializer.type", ("json", "avro"),
                                                  "json")}
        for name, kind in kinds.items():
            if kind == "avro":
                raise PluginConfigError(
                    f"{p.key(name)}=avro: not supported by Headwater (the CloudEvents converter "
                    "writes JSON only)")
        self.extensions = p.get_bool("extension.attributes.enable", True)
        if p.get_bool("opentelemetry.tracing.attributes.enable", False):
            raise PluginConfigError(
                f"{p.key('opentelemetry.tracing.attributes.enable')}=true: not supported by "
                "Headwater (no traceparent header is produced)")
        if p.get_bool("schema.data.name.source.header.enable", False):
            raise PluginConfigError(
                f"{p.key('schema.data.name.source.header.enable')}=true: not supported by "
                "Headwater (metadata from headers)")
        sources = p.get_list("metadata.source", _DEFAULT_METADATA_SOURCE)
        self._check_metadata(p, sources)
        # The outer schema's name (adjusted) and `schema.cloudevents.name` only name the
        # CloudEvents schema, which the schemaless JSON document does not carry.
        p.choice("schema.name.adjustment.mode", MODES, "avro")
        p.get_str("schema.cloudevents.name")
        p.choice("json.decimal.format", ("BASE64",), "BASE64")
        p.ignore("json.schemas.cache.size")
        self.data = JsonConverter(p.get_bool("json.schemas.enable", True))
        self._schemas: dict[int, tuple[ConnectSchema, ConnectSchema]] = {}

    @staticmethod
    def _check_metadata(p: PluginProps, sources: tuple[str, ...]) -> None:
        key = p.key("metadata.source")
        if not sources or sources[0].lower() != "value":
            raise PluginConfigError(
                f"{key}: the global source must be 'value' (Headwater does not read "
                "CloudEvents metadata from headers)")
        for item in sources[1:]:
            field, sep, source = item.partition(":")
            if not sep or source.lower() not in ("header", "generate"):
                raise PluginConfigError(f"{key}: '{item}' is not <field>:header|generate")
            if field not in ("id", "type", "traceparent", "dataSchemaName"):
                raise PluginConfigError(f"{key}: '{field}' is not id, type, traceparent or "
                                        "dataSchemaName")
            if source.lower() == "header" and field != "traceparent":
                raise PluginConfigError(f"{key}: '{item}': metadata from headers is not "
                                        "supported by Headwater")

    def _data_schema(self, envelope: ConnectSchema, connector: str,
                     fields: tuple[str, ...] | None) -> ConnectSchema:
        cached = self._schemas.get(id(envelope))
        if cached is not None and cached[0] is envelope:
            return cached[1]
        chosen = envelope.fields if fields is None else tuple(
            f for name in fields for f in envelope.fields if f.name == name)
        if fields is not None and len(chosen) != len(fields):
            missing = [n for n in fields if field_schema(envelope, n) is None]
            raise TransformError(f"CloudEvents: envelope {envelope.name} has no field "
                                 f"{', '.join(missing)}")
        schema = ConnectSchema(STRUCT, optional=False,
                               name=f"io.debezium.connector.{connector}.Data",
                               fields=tuple(ConnectField(f.name, f.schema) for f in chosen))
        if len(self._schemas) > 1024:
            self._schemas.clear()
        self._schemas[id(envelope)] = (envelope, schema)
        return schema

    def from_connect(self, topic: str, schema: ConnectSchema | None, value: Any) -> bytes | None:
        if schema is None or value is None or not is_envelope(schema):
            return None
        if schema.type != STRUCT or not isinstance(value, dict):
            raise TransformError("Mismatching schema")
        source_schema = field_schema(schema, "source")
        source = value.get("source")
        if source_schema is None or not isinstance(source, dict):
            raise TransformError(f"CloudEvents: the envelope of topic {topic} has no source")
        connector = java_string(_get(source_schema, source, "connector"))
        maker = _MAKERS.get(connector)
        if maker is None:
            raise TransformError(
                f'No usable CloudEvents converters for connector type "{connector}"')
        id_fields, data_fields = maker
        name = java_string(_get(source_schema, source, "name"))
        doc: dict[str, Any] = {
            "id": ";".join(f"{label}:{java_string(_get(source_schema, source, field))}"
                           for label, field in id_fields),
            "source": f"/debezium/{connector}/{name}",
            "specversion": "1.0",
            "type": f"io.debezium.connector.{connector}.DataChangeEvent",
            "time": _time(_get(source_schema, source, "ts_ms")),
            "datacontenttype": "application/json",
        }
        if self.extensions:
            doc["iodebeziumop"] = value.get("op")
            for f in source_schema.fields:
                attr = extension_name(f.name)
                doc[attr] = _extension_value(f.schema, _get(source_schema, source, f.name),
                                             f.name)
            tx = value.get("transaction") if field_schema(schema, "transaction") else None
            for tx_name, tx_type in _TX_FIELDS:
                v = tx.get(tx_name) if isinstance(tx, dict) else None
                doc[extension_name("tx" + tx_name)] = (
                    str(v) if tx_type == INT64 and v is not None else v)
        data_schema = self._data_schema(schema, connector, data_fields)
        data_value = {f.name: _get(schema, value, f.name) for f in data_schema.fields}
        data = self.data.from_connect(topic, data_schema, data_value)
        assert data is not None
        head = orjson.dumps(doc)
        return head[:-1] + b',"data":' + data + b"}"
