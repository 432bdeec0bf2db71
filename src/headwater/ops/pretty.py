"""Readable one-line renderings of Debezium records for `headwater topics tail --pretty`."""

from __future__ import annotations

from typing import Any

import orjson

from headwater.topics.reader import Record

_OPS = {"c": "[green]create[/green]", "u": "[yellow]update[/yellow]", "d": "[red]delete[/red]",
        "r": "[cyan]read[/cyan]", "t": "[magenta]truncate[/magenta]"}


def _payload(doc: bytes | None) -> Any:
    if doc is None:
        return None
    parsed = orjson.loads(doc)
    if isinstance(parsed, dict) and "payload" in parsed and "schema" in parsed:
        return parsed["payload"]
    return parsed


def _row(row: dict[str, Any] | None) -> str:
    if row is None:
        return "-"
    return "{" + ", ".join(f"{k}={v!r}" for k, v in row.items()) + "}"


def format_record(rec: Record) -> str:
    key = _payload(rec.key)
    value = _payload(rec.value)
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
        body = f"{_row(before)} -> {_row(after)}"
    elif op == "d":
        body = _row(before)
    else:
        body = _row(after)
    return f"{head} {_OPS.get(op, op)} {body} [dim]({where})[/dim]"
