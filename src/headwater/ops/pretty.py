"""Readable one-line renderings of Debezium records for `headwater topics tail --pretty`."""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from typing import Any

import orjson

from headwater.converters.headers import header_value
from headwater.topics.reader import Record

_OPS = {"c": "[green]create[/green]", "u": "[yellow]update[/yellow]", "d": "[red]delete[/red]",
        "r": "[cyan]read[/cyan]", "t": "[magenta]truncate[/magenta]"}


def _split(doc: bytes | None) -> tuple[Any, dict[str, Any]]:
    """(payload, {field: schema}) of the row fields, when the document carries a schema."""
    if doc is None:
        return None, {}
    parsed = orjson.loads(doc)
    if isinstance(parsed, dict) and "payload" in parsed and "schema" in parsed:
        fields: dict[str, Any] = {}
        for f in parsed["schema"].get("fields") or []:
            if f.get("field") == "after":
                fields = {c["field"]: c for c in f.get("fields", [])}
        return parsed["payload"], fields
    return parsed, {}


def _readable(value: Any, schema: dict[str, Any] | None) -> Any:
    """Decodes the Connect encodings that are unreadable as-is (decimals, dates)."""
    if value is None or schema is None:
        return value
    name = schema.get("name")
    try:
        if name == "org.apache.kafka.connect.data.Decimal" and isinstance(value, str):
            scale = int(schema.get("parameters", {}).get("scale", 0))
            unscaled = int.from_bytes(base64.b64decode(value), "big", signed=True)
            return Decimal(unscaled).scaleb(-scale)
        if name == "io.debezium.time.Date" and isinstance(value, int):
            return (dt.date(1970, 1, 1) + dt.timedelta(days=value)).isoformat()
        if name == "io.debezium.time.MicroTimestamp" and isinstance(value, int):
            return (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=value)).isoformat()
    except (ValueError, OverflowError):
        return value
    return value


def _row(row: dict[str, Any] | None, fields: dict[str, Any]) -> str:
    if row is None:
        return "-"
    return "{" + ", ".join(
        f"{k}={_readable(v, fields.get(k))!s}" if fields.get(k, {}).get("name") else f"{k}={v!r}"
        for k, v in row.items()
    ) + "}"


def format_record(rec: Record) -> str:
    key, _ = _split(rec.key)
    value, fields = _split(rec.value)
    head = f"[dim]{rec.topic}@{rec.offset}[/dim] key={key}"
    if value is None:
        return f"{head} [dim]tombstone[/dim]"
    op = value.get("op", "?")
    src = value.get("source") or {}
    where = f"lsn={src.get('lsn')} tx={src.get('txId')}"
    snap = src.get("snapshot")
    if snap not in (None, "false", False):
        where += f" snapshot={snap}"
    before, after = value.get("before"), value.get("after")
    if op == "u":
        body = f"{_row(before, fields)} -> {_row(after, fields)}"
    elif op == "d":
        body = _row(before, fields)
    else:
        body = _row(after, fields)
    # A primary-key change: the other half's key (either header converter's form).
    for name, raw in rec.headers:
        if name in ("__debezium.newkey", "__debezium.oldkey"):
            where += f" {name.removeprefix('__debezium.')}={header_value(raw)}"
    return f"{head} {_OPS.get(op, op)} {body} [dim]({where})[/dim]"
