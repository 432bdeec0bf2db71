"""The converter interface (Kafka's `Converter`); the logical-type helpers are in
`headwater.connect.logical`."""

from __future__ import annotations

from typing import Any, Protocol

from headwater.model.schema import ConnectSchema


class Converter(Protocol):
    """Kafka's `Converter.fromConnectData`: None for a null value without schema."""

    def from_connect(self, topic: str, schema: ConnectSchema | None, value: Any) -> bytes | None:
        ...
