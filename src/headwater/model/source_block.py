"""What every connector's Debezium `source` block shares: the connector version string, the
`snapshot` field's schema (a string enum since Debezium 1.x, with Debezium 3.x's values), the
fields every source block starts with (Debezium's common source info), and a field helper."""

from __future__ import annotations

from headwater import __version__
from headwater.model.schema import INT64, STRING, ConnectField, ConnectSchema

CONNECTOR_VERSION = f"headwater-{__version__}"

SNAPSHOT_ENUM_SCHEMA = ConnectSchema(
    STRING,
    optional=True,
    name="io.debezium.data.Enum",
    version=1,
    # Debezium 3.x's SnapshotRecord values, in its order.
    parameters={
        "allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,"
        "incremental"
    },
    default="false",
)


def source_field(name: str, literal: str, optional: bool) -> ConnectField:
    return ConnectField(name, ConnectSchema(literal, optional=optional))


# The leading fields of every connector's source block, in Debezium's order; each connector's
# own fields follow.
COMMON_SOURCE_FIELDS: tuple[ConnectField, ...] = (
    source_field("version", STRING, False),
    source_field("connector", STRING, False),
    source_field("name", STRING, False),
    source_field("ts_ms", INT64, False),
    ConnectField("snapshot", SNAPSHOT_ENUM_SCHEMA),
    source_field("db", STRING, False),
    source_field("sequence", STRING, True),
)

# Debezium 3.x's microsecond and nanosecond source times, right after the common fields.
SOURCE_TIME_FIELDS: tuple[ConnectField, ...] = (
    source_field("ts_us", INT64, True),
    source_field("ts_ns", INT64, True),
)
