"""What every connector's Debezium `source` block shares: the connector version string, the
`snapshot` field's schema (a string enum since Debezium 1.x) and a field helper."""

from __future__ import annotations

from headwater import __version__
from headwater.model.schema import STRING, ConnectField, ConnectSchema

CONNECTOR_VERSION = f"headwater-{__version__}"

SNAPSHOT_ENUM_SCHEMA = ConnectSchema(
    STRING,
    optional=True,
    name="io.debezium.data.Enum",
    version=1,
    parameters={"allowed": "true,last,false,incremental"},
    default="false",
)


def source_field(name: str, literal: str, optional: bool) -> ConnectField:
    return ConnectField(name, ConnectSchema(literal, optional=optional))
