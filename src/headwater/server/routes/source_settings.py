"""Datastream's `<kind>SourceConfig` fields beyond the object lists, as the connector's
properties.

Why a table per kind: each of Google's source configs has its own few fields
(PostgresqlSourceConfig's `replicationSlot` and `publication`, MysqlSourceConfig's and
SqlServerSourceConfig's CDC method, MongodbSourceConfig's `jsonMode`), and a Datastream user's
request must either take effect or be refused naming the field: nothing is dropped.  A field
that has no meaning here (Headwater reads the log with one task: `maxConcurrentCdcTasks`) is
checked and then said in the log, as docs/streams.md says.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from headwater.streams.model import StreamSpecError

log = logging.getLogger("headwater.server.streams")

__all__ = ["source_settings"]

OBJECT_LISTS: Final = ("includeObjects", "excludeObjects")

# A field's reader: its value -> properties (empty: nothing to set); raises StreamSpecError.
Reader = Callable[[str, str, Any], dict[str, str]]


def _tasks(prop: str | None) -> Reader:
    """An int 0-50 (Datastream's range; 0: the default) into `prop`; None: checked only."""

    def read(where: str, key: str, value: Any) -> dict[str, str]:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 50:
            raise StreamSpecError(f"{where}.{key}: {value!r} is not 0 to 50")
        if prop is None:
            if value > 1:
                log.warning("%s.%s=%d: Headwater reads the source's log with one task (the "
                            "value is checked, not used)", where, key, value)
            return {}
        return {prop: str(value)} if value else {}

    return read


def _name(prop: str, extra: Mapping[str, str] | None = None) -> Reader:
    """A non-empty string into `prop` (and `extra` beside it)."""

    def read(where: str, key: str, value: Any) -> dict[str, str]:
        if not isinstance(value, str) or not value.strip():
            raise StreamSpecError(f"{where}.{key}: {value!r} is not a name")
        return {prop: value.strip(), **(extra or {})}

    return read


def _empty(where: str, key: str, value: Any) -> dict[str, str]:
    """A CDC method that is the connector's own (an empty message in Datastream's API)."""
    if value not in ({}, None):
        raise StreamSpecError(f"{where}.{key}: expected an empty object, not {value!r}")
    return {}


def _refused(why: str) -> Reader:
    def read(where: str, key: str, value: Any) -> dict[str, str]:
        raise StreamSpecError(f"{where}.{key}: {why}")

    return read


_MONGODB_JSON_MODES: Final = {"STRICT": "strict", "CANONICAL": "canonical"}


def _json_mode(where: str, key: str, value: Any) -> dict[str, str]:
    if value == "MONGODB_JSON_MODE_UNSPECIFIED":
        return {}
    if value not in _MONGODB_JSON_MODES:
        raise StreamSpecError(f"{where}.{key}: {value!r} is not STRICT or CANONICAL")
    return {"headwater.datastream.mongodb.json.mode": _MONGODB_JSON_MODES[value]}


_BACKFILL_TASKS: Final = _tasks("snapshot.max.threads")

FIELDS: Final[dict[str, dict[str, Reader]]] = {
    # Datastream needs the slot and the publication made beforehand and reads what the
    # publication publishes: the named publication is used as it is (not altered to the
    # include list, which still filters), the slot is created if missing.
    "postgresql": {
        "replicationSlot": _name("slot.name"),
        "publication": _name("publication.name", {"publication.autocreate.mode": "disabled"}),
        "maxConcurrentBackfillTasks": _BACKFILL_TASKS,
    },
    # The binlog is read by position, with the GTID set kept where the server has GTIDs on
    # (as Debezium): both of Datastream's CDC methods are that.
    "mysql": {
        "maxConcurrentBackfillTasks": _BACKFILL_TASKS,
        "maxConcurrentCdcTasks": _tasks(None),
        "binaryLogPosition": _empty,
        "gtid": _empty,
    },
    "sqlServer": {
        "maxConcurrentBackfillTasks": _BACKFILL_TASKS,
        "maxConcurrentCdcTasks": _tasks(None),
        "changeTables": _empty,
        "transactionLogs": _refused("Headwater reads SQL Server's change tables only (give "
                                    "changeTables, or nothing)"),
    },
    "mongodb": {
        "maxConcurrentBackfillTasks": _BACKFILL_TASKS,
        "jsonMode": _json_mode,
    },
}


def source_settings(prefix: str, doc: Mapping[str, Any]) -> dict[str, str]:
    """The connector properties of a `<prefix>SourceConfig`'s fields beyond its object
    lists; a field Datastream's config of that kind does not have is refused, naming it."""
    where = f"{prefix}SourceConfig"
    readers = FIELDS.get(prefix, {})
    props: dict[str, str] = {}
    for key, value in doc.items():
        if key in OBJECT_LISTS:
            continue
        reader = readers.get(key)
        if reader is None:
            known = ", ".join((*OBJECT_LISTS, *readers))
            raise StreamSpecError(f"{where}.{key}: unknown field ({where} has {known})")
        props.update(reader(where, key, value))
    return props
