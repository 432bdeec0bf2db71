"""What every transform and predicate is, and the `$Key`/`$Value` helper Kafka's SMTs share."""

from __future__ import annotations

from typing import Any, Protocol

from headwater.connect.record import ConnectRecord
from headwater.model.schema import ConnectSchema


class Transform(Protocol):
    """Kafka's `Transformation.apply`: the new record, or None to drop it."""

    def apply(self, record: ConnectRecord) -> ConnectRecord | None: ...


class Predicate(Protocol):
    def test(self, record: ConnectRecord) -> bool: ...


class KeyOrValue:
    """Picks the key or the value side of a record (Kafka's `$Key` / `$Value` variants)."""

    def __init__(self, key: bool) -> None:
        self.is_key = key

    def schema(self, record: ConnectRecord) -> ConnectSchema | None:
        return record.key_schema if self.is_key else record.value_schema

    def value(self, record: ConnectRecord) -> Any:
        return record.key if self.is_key else record.value

    def new(self, record: ConnectRecord, schema: ConnectSchema | None, value: Any
            ) -> ConnectRecord:
        if self.is_key:
            return record.replace(key_schema=schema, key=value)
        return record.replace(value_schema=schema, value=value)
