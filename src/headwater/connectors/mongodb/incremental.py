"""MongoDB's side of incremental snapshots: chunks by `_id`, watermarks in the signal collection
(MongoDbIncrementalSnapshotChangeEventSource).

Why this module: the engine's controller (`headwater.engine.incremental`) runs the watermark
algorithm against a `ChunkSource`; here are the MongoDB queries and writes behind it.

* Chunks follow the `_id` index: ``_id > last AND _id <= maximum [AND filter]`` sorted by `_id`,
  `incremental.snapshot.chunk.size` documents at a time.  MongoDB's ``$gt``/``$lte`` query
  operators are *type-bracketed* (``{_id: {$gt: 5}}`` never matches a string or an ObjectId), so
  with mixed `_id` types Debezium's predicate would skip whole types.  The bounds are therefore
  aggregation comparisons (``$expr``), which order values of different types by BSON's type
  order (numbers < strings < objects < binary < ObjectId < booleans < dates ...), the order of
  the `_id` index itself; the scan starts at the last key through the index (``min()`` with the
  `_id` index hinted), so a chunk costs an index range, not a collection scan.
* Keys in offsets (``incremental_snapshot_primary_key``, ``_maximum_key``) are one-element JSON
  lists: an int32 as a plain number, every other type in canonical Extended JSON, so the exact
  BSON type survives a restart (an Int64 5 and an int32 5 are the same `_id` to MongoDB, but a
  string "5" is not).
* Window keys compare `_id` values as MongoDB does for equality: numbers by value (1, 1.0 and
  NumberLong(1) are one `_id`), everything else by its Extended JSON text.
* Watermarks: ``{_id: "<chunk>-open", type: "snapshot-window-open", payload: ""}`` inserted
  into the signal collection, and ``<chunk>-close`` (or, ``insert_delete``, the delete of the
  open document), as Debezium writes them.  They are written with majority write concern: a
  majority-acknowledged write has no oplog hole before it, so every change the stream shows
  before the open watermark is committed, and visible to the chunk read that follows.
* ``additional-conditions`` filters are MongoDB query documents (shell-style JSON accepted,
  `query_json`), combined with ``$and``; the maximum key is the largest `_id` matching it.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Hashable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

from bson import Decimal128, json_util
from bson.codec_options import DatetimeConversion
from bson.json_util import CANONICAL_JSON_OPTIONS
from pymongo import WriteConcern

from headwater.connectors.mongodb import connection
from headwater.connectors.mongodb.query_json import FilterError, parse_filter
from headwater.connectors.mongodb.rawdoc import FAST_RAW_OPTIONS
from headwater.engine.incremental import (
    BlockingSnapshotBatches,
    ChunkRead,
    IncrementalSnapshotError,
    RawKey,
    SnapshotTable,
)
from headwater.engine.signals import WINDOW_CLOSE, WINDOW_OPEN
from headwater.model.collection import split_collection
from headwater.model.record import ChangeRecord, Op, SnapshotMarker

if TYPE_CHECKING:
    from headwater.connectors.mongodb.connector import MongoDbConnector
    from headwater.connectors.mongodb.position import MongoPosition

log = logging.getLogger("headwater.connectors.mongodb.incremental")

_INT32 = (-(2**31), 2**31 - 1)


# -- keys ----------------------------------------------------------------------------------------

def encode_key(value: Any) -> Any:
    """An `_id` as stored in offsets (see the module doc)."""
    if type(value) is int and _INT32[0] <= value <= _INT32[1]:
        return value
    return json.loads(json_util.dumps(value, json_options=CANONICAL_JSON_OPTIONS))


_KEY_JSON: Final = CANONICAL_JSON_OPTIONS.with_options(
    datetime_conversion=DatetimeConversion.DATETIME_AUTO)


def decode_key(stored: Any) -> Any:
    """The inverse of `encode_key`: the BSON value (a date outside datetime's range as
    DatetimeMS)."""
    return json_util.loads(json.dumps(stored), json_options=_KEY_JSON)


def window_key(value: Any) -> Hashable:
    """An `_id` as the window compares it: equal when MongoDB holds them equal."""
    if isinstance(value, bool):
        return (1, "true" if value else "false")
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, Decimal128):
        number = value.to_decimal()
        return (0, number) if number.is_finite() else (0, float(number))
    if isinstance(value, Decimal):
        return (0, value)
    return (1, json_util.dumps(value, json_options=CANONICAL_JSON_OPTIONS))


def signal_collection(name: str | None) -> tuple[str, str] | None:
    """``signal.data.collection`` as (database, collection)."""
    if not name:
        return None
    parts = split_collection(name)
    if len(parts) == 2:
        return parts[0], parts[1]
    db, _, coll = name.partition(".")  # an unquoted collection name with dots
    if not db or not coll:
        raise IncrementalSnapshotError(
            f"signal.data.collection={name!r}: name the signal collection <db>.<collection>")
    return db, coll


# -- the chunk source -----------------------------------------------------------------------------

class MongoChunkSource:
    """Chunk, maximum-key and watermark operations (`headwater.engine.incremental.ChunkSource`).

    One client, opened on first use; the streaming loop owns the change stream's own client.
    """

    def __init__(self, connector: MongoDbConnector,
                 position: Callable[[], MongoPosition | None]) -> None:
        self.connector = connector
        self.cfg = connector.config
        self.signals = self.cfg.signals
        self.signal_ns = signal_collection(self.signals.data_collection)
        self._position = position
        self._client: Any = None
        self._filters: dict[str, dict[str, Any]] = {}
        if self.signals.read_only:
            log.warning("read.only=true: the MongoDB connector has no read-only incremental "
                        "snapshots (Debezium neither); watermarks go to the signal collection")

    @property
    def read_only(self) -> bool:
        return False

    def client(self) -> Any:
        if self._client is None:
            self._client = connection.client(self.cfg)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- collections ---------------------------------------------------------------------------
    def resolve(self, table: SnapshotTable) -> SnapshotTable:
        if table.surrogate_key:
            raise IncrementalSnapshotError(
                f"{table.name}: surrogate-key is not supported for MongoDB (chunks follow _id)")
        parts = table.collection
        if len(parts) == 1 and self.cfg.capture_scope == "database" and self.cfg.capture_target:
            parts = (self.cfg.capture_target, parts[0])
        elif len(parts) == 3:  # an unquoted collection name with a dot
            parts = (parts[0], f"{parts[1]}.{parts[2]}")
        if len(parts) != 2:
            raise IncrementalSnapshotError(f"{table.name}: name the collection <db>.<collection>")
        db, coll = parts
        if not self.cfg.database_filter(db) or not self.cfg.collection_filter(db, coll):
            raise IncrementalSnapshotError(f"collection {db}.{coll} is not captured "
                                           "(database/collection include and exclude lists)")
        if coll not in self.client()[db].list_collection_names(filter={"name": coll}):
            raise IncrementalSnapshotError(f"collection {db}.{coll} does not exist")
        if table.condition:
            try:
                parse_filter(table.condition)
            except FilterError as exc:
                raise IncrementalSnapshotError(f"{db}.{coll}: {exc}") from None
        return SnapshotTable((db, coll), table.condition, None)

    def _collection(self, table: SnapshotTable) -> Any:
        """The collection, read as FastRawDocuments: chunk documents are encoded from their
        bytes like the initial snapshot's (exact for every BSON type; a decoded read loses
        symbol, undefined, DBPointer and regex option order, and fails on dates after 9999)."""
        db, coll = table.collection
        return self.client()[db].get_collection(coll, codec_options=FAST_RAW_OPTIONS)

    def _filter(self, table: SnapshotTable) -> dict[str, Any]:
        return parse_filter(table.condition) if table.condition else {}

    # -- chunks --------------------------------------------------------------------------------
    def max_key(self, table: SnapshotTable) -> RawKey | None:
        doc = self._collection(table).find_one(self._filter(table), {"_id": 1},
                                               sort=[("_id", -1)])
        return [encode_key(doc["_id"])] if doc is not None else None

    def read_chunk(self, table: SnapshotTable, after: RawKey | None, maximum: RawKey,
                   limit: int) -> ChunkRead:
        codec = self.connector.codec(*table.collection)
        top = decode_key(maximum[0])
        terms: list[dict[str, Any]] = [{"$expr": {"$lte": ["$_id", {"$literal": top}]}}]
        start = decode_key(after[0]) if after is not None else None
        if after is not None:
            terms.insert(0, {"$expr": {"$gt": ["$_id", {"$literal": start}]}})
        condition = self._filter(table)
        if condition:
            terms.append(condition)
        cursor = self._collection(table).find({"$and": terms}).sort("_id", 1).hint(
            [("_id", 1)]).limit(limit)
        if after is not None:
            cursor = cursor.min([("_id", start)])
        rows: list[tuple[Hashable, Any]] = []
        last: Any = None
        with cursor:
            for doc in cursor:
                last = doc["_id"]
                rows.append((window_key(last), codec.read(doc)))
        return ChunkRead(codec.schema, rows, [encode_key(last)] if rows else None)

    # -- watermarks ----------------------------------------------------------------------------
    def _signals(self) -> Any:
        if self.signal_ns is None:
            raise IncrementalSnapshotError(
                "incremental snapshots need signal.data.collection: the watermarks are written "
                "there")
        db, coll = self.signal_ns
        return self.client()[db].get_collection(coll, write_concern=WriteConcern(w="majority"))

    def write_watermark(self, chunk_id: str, opening: bool) -> None:
        target = self._signals()
        if not opening and self.signals.watermarking_strategy == "insert_delete":
            target.delete_one({"_id": f"{chunk_id}-open"})
            return
        target.insert_one({"_id": f"{chunk_id}-{'open' if opening else 'close'}",
                           "type": WINDOW_OPEN if opening else WINDOW_CLOSE, "payload": ""})

    # -- blocking snapshot ---------------------------------------------------------------------
    def blocking_snapshot(self, tables: Sequence[SnapshotTable],
                          emit: Callable[[list[ChangeRecord]], None]) -> None:
        """Each collection read in full (with its filter), streaming paused meanwhile."""
        from headwater.connectors.mongodb.position import MongoPosition

        here = self._position()
        position = MongoPosition(-1, -1, here.resume_token if here is not None else None)
        batches = BlockingSnapshotBatches(emit, self.cfg.max_batch_size)
        for table in tables:
            codec = self.connector.codec(*table.collection)
            log.info("blocking snapshot step: read %s", table.name)
            with self._collection(table).find(self._filter(table)) as cursor:
                for doc in cursor:
                    now = int(time.time() * 1000)
                    batches.add(ChangeRecord(self.connector.context, codec.schema, Op.READ,
                                             None, codec.read(doc), now, now,
                                             SnapshotMarker.TRUE, position))
        batches.finish()


__all__ = ["MongoChunkSource", "decode_key", "encode_key", "signal_collection", "window_key"]
