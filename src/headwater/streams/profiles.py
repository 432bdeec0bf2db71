"""Connection profiles: where a stream reads from and where it writes to, named and reused.

Why: a Datastream user creates a connection profile once and points many streams at it.
Source profiles hold connection properties under Debezium's names (`database.hostname`,
...), so a profile is the connection part of a connector configuration and nothing has to be
translated twice.  What each source kind needs is data (`SourceKind`), keyed by the
connector registration it runs on: MongoDB is one more `SourceKind` (its object filters and
discover are the kind's own, in translate.py and discover.py); the catalog and the CLI are the
same.

Secrets are stored as given (a `${env:...}` or `${file:...}` placeholder is the way to keep
them out of the catalog, as in connector configurations) and masked in every rendering.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from headwater.connectors.registry import RegistryError, registration_for_class

if TYPE_CHECKING:
    from headwater.config.definition import ConfigDef

MASK: Final = "********"
_SECRET = re.compile(r"password|secret|token|credential|\.key$|keystore|truststore\.password",
                     re.IGNORECASE)
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,62}")
# The password of a URI's user information (`mongodb://user:pw@host/`): a connection string
# is not a secret by its name, but may hold one.
_URI_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:/?#@]*):[^/?#@]*@")


class ProfileError(ValueError):
    """A profile that cannot be used as written; the message names the property."""


def check_name(what: str, name: str) -> str:
    """Names become directory, slot and topic-prefix parts: letters, digits, '_' and '-'."""
    if not _NAME.fullmatch(name):
        raise ProfileError(f"{what} name {name!r}: use a letter, then letters, digits, '_' or "
                           "'-' (at most 63 characters)")
    return name


def is_secret(key: str) -> bool:
    return bool(_SECRET.search(key))


def masked_value(key: str, value: str, mask: str = MASK) -> str:
    """The value as printed: a secret's masked, and so is the password inside a URI (a
    `mongodb.connection.string` with `user:password@`)."""
    if is_secret(key):
        return mask if value else value
    return _URI_PASSWORD.sub(lambda m: f"{m.group(1)}:{mask}@", value, count=1)


def masked(properties: Mapping[str, str], mask: str = MASK) -> dict[str, str]:
    """The properties with every secret value replaced by a mask (for printing)."""
    return {k: masked_value(k, v, mask) for k, v in properties.items()}


@dataclass(frozen=True, slots=True)
class SourceKind:
    """One kind of source: its connector, its required connection properties, defaults."""

    name: str  # "postgresql", "mysql", "mongodb", "sqlserver": the Datastream profile kind
    connector_class: str
    required: tuple[str, ...]
    defaults: Mapping[str, str] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    # The name level Datastream's include/exclude objects start at ("schema" or "database").
    container: str = "schema"

    def unknown_keys(self, keys: Iterable[str]) -> list[str]:
        """The keys the connector's configuration does not know (its ConfigDef's answer)."""
        from headwater.connectors.lazy import imported

        registration = registration_for_class(self.connector_class)
        if not registration.config_definition:
            return []
        defn: ConfigDef = imported(registration.config_definition)
        return defn.unknown_keys(keys)

    def registration_name(self) -> str:
        """The connector registration's name; a kind whose connector is not registered
        (e.g. not installed) is refused when a profile is created, not when a stream runs."""
        try:
            return registration_for_class(self.connector_class).name
        except RegistryError as exc:
            raise ProfileError(f"source kind {self.name}: {exc}") from None


SOURCE_KINDS: Final[tuple[SourceKind, ...]] = (
    SourceKind("postgresql", "io.debezium.connector.postgresql.PostgresConnector",
               ("database.hostname", "database.user", "database.dbname"),
               {"database.port": "5432"}, ("postgres", "pg"), "schema"),
    SourceKind("mysql", "io.debezium.connector.mysql.MySqlConnector",
               ("database.hostname", "database.user"),
               {"database.port": "3306"}, ("mariadb",), "database"),
    SourceKind("mongodb", "io.debezium.connector.mongodb.MongoDbConnector",
               ("mongodb.connection.string",), {}, ("mongo",), "database"),
    # One database per profile, as Datastream's SqlServerProfile (`database`); objects are
    # `schema.table` inside it.
    SourceKind("sqlserver", "io.debezium.connector.sqlserver.SqlServerConnector",
               ("database.hostname", "database.user", "database.names"),
               {"database.port": "1433"}, ("mssql",), "schema"),
)

DESTINATION_KINDS: Final = ("topics", "files")
FILE_FORMATS: Final = ("json", "avro")


def source_kind(name: str) -> SourceKind:
    wanted = name.strip().lower()
    for kind in SOURCE_KINDS:
        if wanted == kind.name or wanted in kind.aliases:
            return kind
    raise ProfileError(f"unknown source kind {name!r}; known: "
                       + ", ".join(k.name for k in SOURCE_KINDS))


@dataclass(frozen=True, slots=True)
class Profile:
    """A named connection profile.  `role` is "source" or "destination"; `kind` is a source
    kind name or a destination kind ("topics", "files")."""

    name: str
    role: str
    kind: str
    properties: Mapping[str, str]
    created_ms: int = 0
    updated_ms: int = 0

    def rendered(self, mask: str = MASK) -> dict[str, object]:
        """Datastream's ConnectionProfile shape, with secrets masked (by `mask`)."""
        props = masked(self.properties, mask)
        doc: dict[str, object] = {"name": self.name, "role": self.role, "kind": self.kind,
                                  "createTime": self.created_ms, "updateTime": self.updated_ms}
        if self.role == "source":
            # Datastream's field: postgresqlProfile, mysqlProfile, mongodbProfile,
            # sqlServerProfile
            doc[f"{'sqlServer' if self.kind == 'sqlserver' else self.kind}Profile"] = props
        else:
            doc["destinationProfile"] = props
        return doc


def source_profile(name: str, kind: str, properties: Mapping[str, str]) -> Profile:
    """A validated source profile: required properties present, defaults filled in, the
    connector registered."""
    check_name("profile", name)
    k = source_kind(kind)
    k.registration_name()
    props = {**k.defaults, **{key.strip(): str(v) for key, v in properties.items()}}
    unknown = k.unknown_keys(props)
    if unknown:  # stored now, refused only when a stream starts: say it now
        raise ProfileError(f"source profile {name!r} ({k.name}): " + "; ".join(unknown))
    missing = [p for p in k.required if not props.get(p)]
    if missing:
        raise ProfileError(f"source profile {name!r} ({k.name}): missing "
                           + ", ".join(missing))
    if k.name == "sqlserver" and len([d for d in props["database.names"].split(",")
                                      if d.strip()]) != 1:
        raise ProfileError(f"source profile {name!r} (sqlserver): database.names="
                           f"{props['database.names']}: a SQL Server profile names one "
                           "database (Datastream's SqlServerProfile.database); create one "
                           "profile per database")
    if "connector.class" in props:
        raise ProfileError(f"source profile {name!r}: connector.class comes from the kind "
                           f"({k.name}), do not set it")
    return Profile(name, "source", k.name, props)


def destination_profile(name: str, kind: str, directory: str, file_format: str = "json"
                        ) -> Profile:
    """A topic-log destination (`directory` holds one topic log per stream) or a files
    destination (`directory` + `json`/`avro`, written by the files destination)."""
    check_name("profile", name)
    if kind not in DESTINATION_KINDS:
        raise ProfileError(f"unknown destination kind {kind!r}; known: "
                           + ", ".join(DESTINATION_KINDS))
    if not directory:
        raise ProfileError(f"destination profile {name!r}: a directory is required")
    # Stored absolute: a relative directory means where it was given, not wherever a later
    # command (or the service) happens to run.
    props = {"directory": str(Path(directory).expanduser().resolve())}
    if kind == "files":
        if file_format not in FILE_FORMATS:
            raise ProfileError(f"destination profile {name!r}: format {file_format!r} is not "
                               + " or ".join(FILE_FORMATS))
        props["format"] = file_format
    return Profile(name, "destination", kind, props)
