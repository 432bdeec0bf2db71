"""Signals of the MongoDB connector and the streaming loop's side of incremental snapshots.

Why a hook: the change stream loop (streaming.py) only reports what it reads; everything about
signals and snapshot windows is here, over the engine's controller
(`headwater.engine.incremental`), as the relational connectors do it.

* The source channel is the collection ``signal.data.collection`` (``<db>.<collection>``).  It
  is in the change stream's filter even when it is not captured, and its inserts are read as
  signals where the stream has them, after every change before them.  A signal document has
  three fields, read in order as Debezium's MongoDbConnectorConfig.parseSignallingMessage does:
  the id (usually `_id`), the type and the data (JSON text, or a sub-document, which is read
  as its JSON), e.g. ``{_id: "s1", type: "execute-snapshot", data: {"data-collections":
  ["db.orders"]}}``; fields named ``id``/``type``/``data`` are read by name whatever their
  order.
* The file channel (``signal.file``) is the engine's: polled at boundaries, position in the
  offset.
* ``data-collections`` of ``execute-snapshot`` and ``stop-snapshot`` are regular expressions
  matched against the captured ``<db>.<collection>`` names (Debezium's
  expandAndDedupeDataCollectionIds; a name nothing matches is kept as written), and each
  ``additional-conditions`` entry applies to the collections its ``data-collection`` matches.
* Boundaries are the stream's transaction boundaries: after a change outside a transaction,
  and when a transaction ends (next event of another one, or the stream idle).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import orjson
from bson import json_util

from headwater.config.signals import SignalConfig
from headwater.connectors.mongodb.incremental import MongoChunkSource, window_key
from headwater.engine.incremental import IncrementalSnapshotController
from headwater.engine.signals import WINDOW_CLOSE, WINDOW_OPEN, FileSignalChannel, Signal
from headwater.model.collection import format_collection
from headwater.model.record import ChangeRecord

if TYPE_CHECKING:
    from headwater.connectors.mongodb.connector import MongoDbConnector
    from headwater.connectors.mongodb.position import MongoPosition

log = logging.getLogger("headwater.connectors.mongodb.signals")

FILE_POSITION = "signal_file_position"
Emit = Callable[[list[ChangeRecord]], None]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return json_util.dumps(value)
    return str(value)


def signal_from_document(doc: Mapping[str, Any]) -> Signal:
    """A signal collection document as a Signal (see the module doc)."""
    if "type" in doc and ("id" in doc or "_id" in doc) and ("data" in doc or len(doc) == 3):
        ident = doc["id"] if "id" in doc else doc["_id"]
        rest = [v for k, v in doc.items() if k not in ("id", "_id", "type")]
        data = doc["data"] if "data" in doc else (rest[0] if rest else None)
        return Signal(str(ident), str(doc["type"]), _text(data))
    values = list(doc.values())
    if len(values) != 3:
        log.warning("signal document %s ignored: it should have 3 fields (id, type, data)",
                    json_util.dumps(doc)[:200])
        return Signal("", "", None)
    return Signal(str(values[0]), str(values[1]), _text(values[2]))


def _matches(pattern: str, name: str) -> bool:
    try:
        return re.fullmatch(pattern, name) is not None
    except re.error:
        return pattern == name


def expand_names(patterns: list[str], known: list[str]) -> list[str]:
    """Each pattern replaced by the known names it matches in full (itself when none)."""
    out: list[str] = []
    for pattern in patterns:
        found = [n for n in known if _matches(pattern, n)] or [pattern]
        out.extend(n for n in found if n not in out)
    return out


def expand_signal(signal: Signal, known: list[tuple[str, str]]) -> Signal:
    """`signal` with its data-collections (and their conditions) as explicit names."""
    if signal.type.strip().lower() not in ("execute-snapshot", "stop-snapshot") or \
            not signal.data:
        return signal
    try:
        doc = orjson.loads(signal.data)
    except orjson.JSONDecodeError:
        return signal  # the engine reports it
    raw = doc.get("data-collections") if isinstance(doc, dict) else None
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        return signal
    plain = {f"{d}.{c}": format_collection((d, c)) for d, c in known}
    names = expand_names(raw, list(plain))
    if names != raw:
        log.info("signal %r: data-collections %s expanded to %s", signal.id, raw, names)
    doc["data-collections"] = [plain.get(n, n) for n in names]
    conditions = doc.get("additional-conditions")
    if isinstance(conditions, list):
        explicit = []
        for name in names:
            for item in conditions:
                if isinstance(item, dict) and isinstance(item.get("data-collection"), str) \
                        and _matches(item["data-collection"], name):
                    explicit.append({**item, "data-collection": plain.get(name, name)})
                    break
        doc["additional-conditions"] = explicit
    return Signal(signal.id, signal.type, orjson.dumps(doc).decode(), signal.channel)


class MongoIncrementalHook:
    """What the change stream loop calls: every event's namespace, boundaries, offsets."""

    def __init__(self, connector: MongoDbConnector,
                 position: Callable[[], MongoPosition | None]) -> None:
        self.connector = connector
        self.signals: SignalConfig = connector.config.signals
        self.source = MongoChunkSource(connector, position)
        self.signal_ns = self.source.signal_ns
        self.source_channel = self.signals.source_channel
        self.controller: IncrementalSnapshotController | None = None
        self.file: FileSignalChannel | None = None
        self._next_poll = 0.0

    def start(self, offset: Mapping[str, Any] | None) -> None:
        cfg = self.signals
        self.controller = IncrementalSnapshotController(
            self.source, self.connector.context, chunk_size=cfg.chunk_size,
            offset=dict(offset) if offset else None,
            metrics=self.connector.metrics)
        # The file channel is read here, not by the controller: its data-collections are
        # expanded like the source channel's.
        self.file = (FileSignalChannel(cfg.file, int((offset or {}).get(FILE_POSITION, 0)))
                     if cfg.file_channel else None)
        self._next_poll = 0.0

    def _ctl(self) -> IncrementalSnapshotController:
        assert self.controller is not None, "hook used before start"
        return self.controller

    def offset_fields(self) -> dict[str, Any]:
        out = self._ctl().offset_fields()
        if self.file is not None:
            out[FILE_POSITION] = self.file.position
        return out

    # -- events --------------------------------------------------------------------------------
    def event(self, event: Mapping[str, Any], database: str, collection: str,
              position: MongoPosition) -> list[ChangeRecord]:
        """A change stream event: READ records to emit here when it closes a window."""
        ctl = self._ctl()
        window = ctl.window_table
        if window is not None and window == (database, collection):
            key = (event.get("documentKey") or {}).get("_id")
            ctl.key_changed(window_key(key))
        if (database, collection) != self.signal_ns:
            return []
        kind = event.get("operationType")
        if kind == "delete":  # insert_delete: the open watermark's delete closes the window
            ident = (event.get("documentKey") or {}).get("_id")
            if isinstance(ident, str) and ctl.watermark(ident, False):
                return self._close(position)
            return []
        if kind != "insert":
            return []
        signal = signal_from_document(event.get("fullDocument") or {})
        if signal.type in (WINDOW_OPEN, WINDOW_CLOSE):
            if ctl.watermark(signal.id, signal.type == WINDOW_OPEN):
                return self._close(position)
            return []
        if self.source_channel and signal.type:
            ctl.signal(self._expanded(signal))
        return []

    def _close(self, position: MongoPosition) -> list[ChangeRecord]:
        """The chunk's READs, stamped with the close watermark's time (`source.ts_ms`) and
        increment (`ord`, from the position): the pipeline orders MongoDB events by
        (ts_ms, ord), and the close watermark is where the READs belong in the stream.  The
        time the connector handled the watermark (Debezium's stamp) can be later than changes
        that follow it when the capture lags, and a READ ordered after them would undo them."""
        ts = position.wall_time or position.sec * 1000
        return [r._replace(source_ts_ms=ts) for r in self._ctl().close(position)]

    def _expanded(self, signal: Signal) -> Signal:
        try:
            known = self.connector.captured_collections(self.source.client())
        except Exception as exc:  # the names stay as written; resolve reports what is wrong
            log.warning("signal %r: captured collections not listed (%s)", signal.id, exc)
            return signal
        return expand_signal(signal, known)

    def boundary(self, emit_blocking: Emit, before_blocking: Callable[[], None]) -> None:
        """Between transactions: the file channel is read, queued signals run, a chunk starts
        (its watermarks written, its documents read)."""
        ctl = self._ctl()
        file = self.file
        if file is not None:
            now = time.monotonic()
            if now >= self._next_poll:
                self._next_poll = now + self.signals.poll_interval_ms / 1000.0
                for signal in file.poll():
                    ctl.signal(self._expanded(signal))
        if not ctl.idle:
            ctl.boundary(emit_blocking, before_blocking)

    def close(self) -> None:
        self.source.close()


__all__ = ["MongoIncrementalHook", "expand_names", "expand_signal", "signal_from_document"]
