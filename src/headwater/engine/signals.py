"""Signals: how an operator asks a running connector to act (snapshot a table, pause, log).

Why in the engine: the signal vocabulary is Debezium's and the same for every database; only
where a signal row comes from differs.  Two channels exist:

* ``source``: rows inserted into the signal table (``signal.data.collection``, columns
  ``id``, ``type``, ``data`` in that order).  Like Debezium, the connector does not poll that
  table: it recognises the table's rows in its own change stream, so a signal takes effect at
  its place in the stream, after every change committed before it.
* ``file``: ``signal.file``, one JSON object ``{"id": ..., "type": ..., "data": ...}`` per line.
  Lines are consumed once; the byte position after the last consumed line travels in the
  connector offset, so a restart does not replay them.

This module parses signals into typed actions (`parse_action`) and reads the file channel; the
incremental snapshot controller (`headwater.engine.incremental`) carries them out.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from headwater.model.collection import SignalError, same_collection, split_collection

log = logging.getLogger("headwater.engine.signals")

CHANNELS = ("source", "file")

# Signal types written by the connector itself into the signal table (watermarks).
WINDOW_OPEN = "snapshot-window-open"
WINDOW_CLOSE = "snapshot-window-close"


@dataclass(frozen=True, slots=True)
class Signal:
    """One signal as a channel delivers it: `data` is the raw JSON text (or None)."""

    id: str
    type: str
    data: str | None
    channel: str = "source"


@dataclass(frozen=True, slots=True)
class ExecuteSnapshot:
    """``execute-snapshot``: snapshot `collections` (name parts), incrementally or blocking."""

    signal_id: str
    collections: tuple[tuple[str, ...], ...]
    snapshot_type: str  # "incremental" or "blocking"
    # (collection name parts, SQL filter) for the collections that have one
    conditions: tuple[tuple[tuple[str, ...], str], ...] = ()
    surrogate_key: str | None = None

    def condition_for(self, collection: tuple[str, ...]) -> str | None:
        for name, condition in self.conditions:
            if same_collection(name, collection):
                return condition
        return None


@dataclass(frozen=True, slots=True)
class StopSnapshot:
    """``stop-snapshot``: stop the listed collections, or everything when none is listed."""

    signal_id: str
    collections: tuple[tuple[str, ...], ...]
    snapshot_type: str = "incremental"


@dataclass(frozen=True, slots=True)
class PauseSnapshot:
    signal_id: str


@dataclass(frozen=True, slots=True)
class ResumeSnapshot:
    signal_id: str


@dataclass(frozen=True, slots=True)
class LogMessage:
    signal_id: str
    message: str


@dataclass(frozen=True, slots=True)
class ConnectorSignal:
    """A signal type only one connector defines (MySQL's ``set-binlog-position``): its data is
    the connector's to parse, so the connector's handler runs it at the boundary."""

    signal: Signal


Action = (ExecuteSnapshot | StopSnapshot | PauseSnapshot | ResumeSnapshot | LogMessage
          | ConnectorSignal)


# --------------------------------------------------------------------------------------------
# Actions


def signal_data(signal: Signal) -> dict[str, Any]:
    """The signal's data as a JSON object ({} when empty); a SignalError naming the signal
    when it is not one."""
    if signal.data is None or not signal.data.strip():
        return {}
    try:
        doc = orjson.loads(signal.data)
    except orjson.JSONDecodeError as exc:
        raise SignalError(f"signal {signal.id!r}: data is not valid JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise SignalError(f"signal {signal.id!r}: data must be a JSON object")
    return doc


def _collections(signal: Signal, doc: dict[str, Any]) -> tuple[tuple[str, ...], ...]:
    raw = doc.get("data-collections", [])
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise SignalError(f"signal {signal.id!r}: data-collections must be an array of names")
    return tuple(split_collection(x) for x in raw)


def _snapshot_type(signal: Signal, doc: dict[str, Any]) -> str:
    kind = str(doc.get("type") or "incremental").lower()
    if kind not in ("incremental", "blocking"):
        raise SignalError(
            f"signal {signal.id!r}: snapshot type {kind!r} is not incremental or blocking")
    return kind


def _conditions(
    signal: Signal, doc: dict[str, Any], collections: tuple[tuple[str, ...], ...]
) -> tuple[tuple[tuple[str, ...], str], ...]:
    out: list[tuple[tuple[str, ...], str]] = []
    listed = doc.get("additional-conditions")
    if listed is not None:
        if not isinstance(listed, list):
            raise SignalError(f"signal {signal.id!r}: additional-conditions must be an array")
        for item in listed:
            if (not isinstance(item, dict) or not isinstance(item.get("data-collection"), str)
                    or not isinstance(item.get("filter"), str)):
                raise SignalError(
                    f"signal {signal.id!r}: each additional condition needs a data-collection "
                    "and a filter (strings)")
            name = split_collection(item["data-collection"])
            if not any(same_collection(name, c) for c in collections):
                raise SignalError(
                    f"signal {signal.id!r}: additional condition for "
                    f"{item['data-collection']!r}, which is not among the data-collections")
            if item["filter"].strip():
                out.append((name, item["filter"].strip()))
    single = doc.get("additional-condition")  # Debezium 1.x/2.0: one filter for every table
    if single is not None:
        if not isinstance(single, str):
            raise SignalError(f"signal {signal.id!r}: additional-condition must be a string")
        if single.strip():
            out.extend((c, single.strip()) for c in collections
                       if not any(same_collection(c, n) for n, _ in out))
    return tuple(out)


def parse_action(signal: Signal, connector_types: Collection[str] = ()) -> Action | None:
    """The action a signal asks for; None for a type this connector does not know (logged).
    `connector_types` are the connector's own signal types (ConnectorSignal)."""
    kind = signal.type.strip().lower()
    if kind in connector_types:
        return ConnectorSignal(signal)
    if kind == "execute-snapshot":
        doc = signal_data(signal)
        collections = _collections(signal, doc)
        surrogate = doc.get("surrogate-key")
        if surrogate is not None and (not isinstance(surrogate, str) or not surrogate.strip()):
            raise SignalError(f"signal {signal.id!r}: surrogate-key must be a column name")
        return ExecuteSnapshot(
            signal.id, collections, _snapshot_type(signal, doc),
            _conditions(signal, doc, collections), surrogate.strip() if surrogate else None)
    if kind == "stop-snapshot":
        doc = signal_data(signal)
        return StopSnapshot(signal.id, _collections(signal, doc), _snapshot_type(signal, doc))
    if kind == "pause-snapshot":
        return PauseSnapshot(signal.id)
    if kind == "resume-snapshot":
        return ResumeSnapshot(signal.id)
    if kind == "log":
        doc = signal_data(signal)
        message = doc.get("message")
        if not isinstance(message, str):
            raise SignalError(f"signal {signal.id!r}: a log signal needs data.message")
        return LogMessage(signal.id, message)
    if kind in (WINDOW_OPEN, WINDOW_CLOSE):
        return None  # watermarks, handled by the incremental snapshot itself
    log.warning("signal %r of unknown type %r ignored", signal.id, signal.type)
    return None


# --------------------------------------------------------------------------------------------
# Channels


def signal_from_row(values: tuple[Any, ...] | list[Any]) -> Signal:
    """A signal table row (id, type, data as text) into a Signal."""
    if len(values) < 3:
        raise SignalError("the signal table needs three columns: id, type, data")
    ident, kind, data = values[0], values[1], values[2]
    return Signal(str(ident) if ident is not None else "", str(kind or ""),
                  None if data is None else str(data), "source")


class FileSignalChannel:
    """Reads new complete lines of `signal.file` from a remembered byte position.

    A line without its newline is not consumed yet (the writer may be mid-line).  A file that
    became shorter than the position (replaced or truncated) is read again from its start.
    """

    def __init__(self, path: Path, position: int = 0) -> None:
        self.path = Path(path)
        self.position = position

    def poll(self) -> list[Signal]:
        try:
            with self.path.open("rb") as f:
                f.seek(0, 2)
                size = f.tell()
                if size < self.position:
                    log.info("signal file %s shrank: reading it from the start", self.path)
                    self.position = 0
                f.seek(self.position)
                data = f.read(size - self.position)
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n")
        if end < 0:
            return []
        signals: list[Signal] = []
        for line in data[:end].split(b"\n"):
            if not line.strip():
                continue
            try:
                doc = orjson.loads(line)
                if not isinstance(doc, dict) or not isinstance(doc.get("type"), str):
                    raise ValueError("not an object with a type")
                raw = doc.get("data")
                data_text = raw if isinstance(raw, str) or raw is None else orjson.dumps(
                    raw).decode()
                signals.append(Signal(str(doc.get("id", "")), doc["type"], data_text, "file"))
            except (orjson.JSONDecodeError, ValueError) as exc:
                log.warning("signal file %s: line ignored (%s): %r", self.path, exc, line[:200])
        self.position += end + 1
        return signals
