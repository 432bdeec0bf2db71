"""Configuration: file loading, property definitions, validation and secrets.

Why this package exists: every connector reads Debezium-compatible configuration the same way -
``load_properties`` turns a ``.properties``/YAML/JSON file (or a Kafka Connect / Strimzi /
Debezium Server wrapper) into flat strings, a connector's ``ConfigDef`` validates them into typed
values, and ``Secret`` keeps credentials out of logs.  Connector-specific property sets live with
their connector (e.g. ``headwater.connectors.postgres.config``).
"""

from headwater.config.definition import (
    ConfigDef,
    ConfigError,
    ConfigValue,
    Property,
    PropertyType,
    ValidatedConfig,
    ValidationContext,
    Validator,
    regex_list_validator,
    split_list,
)
from headwater.config.loader import (
    ConfigFileError,
    load_properties,
    parse_properties,
    unwrap_debezium_server,
)
from headwater.config.secrets import (
    REDACTED,
    Secret,
    SecretReferenceError,
    is_sensitive_key,
    resolve_references,
)

__all__ = [
    "REDACTED",
    "ConfigDef",
    "ConfigError",
    "ConfigFileError",
    "ConfigValue",
    "Property",
    "PropertyType",
    "Secret",
    "SecretReferenceError",
    "ValidatedConfig",
    "ValidationContext",
    "Validator",
    "is_sensitive_key",
    "load_properties",
    "parse_properties",
    "regex_list_validator",
    "resolve_references",
    "split_list",
    "unwrap_debezium_server",
]
