"""Rebuilds tables from Debezium change topics: the oracle of our end-to-end tests.

Applying every event of a topic in offset order (create/read/update upsert `after` under its
key, delete removes the `before` key, tombstones are skipped) must give back the source table.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from headwater.topics import reader


def events(root: Path, topic: str) -> Iterator[tuple[reader.Record, Any, Any]]:
    """(record, key payload, value payload) for every record of a topic, in offset order."""
    for rec in reader.read(root, topic, from_offset=0):
        key = orjson.loads(rec.key) if rec.key is not None else None
        value = orjson.loads(rec.value) if rec.value is not None else None
        if isinstance(key, dict) and "payload" in key and "schema" in key:
            key = key["payload"]
        if isinstance(value, dict) and "payload" in value and "schema" in value:
            value = value["payload"]
        yield rec, key, value


def _freeze(key: Any) -> Any:
    return tuple(sorted(key.items())) if isinstance(key, dict) else key


def replay(root: Path, topic: str) -> dict[Any, dict[str, Any]]:
    """The table a topic describes: frozen key -> row (the `after` image)."""
    table: dict[Any, dict[str, Any]] = {}
    for _, key, value in events(root, topic):
        if value is None:
            continue
        op = value["op"]
        if op in ("c", "r", "u"):
            table[_freeze(key)] = value["after"]
        elif op == "d":
            table.pop(_freeze(key), None)
        elif op == "t":
            table.clear()
    return table
