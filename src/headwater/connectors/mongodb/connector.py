"""The MongoDB connector: what to run on start (`snapshot.mode` against the stored offset), the
collections it captures, and the change stream every source opens the same way.

Start rules (Debezium 3.x's snapshotters):

* ``initial``: snapshot unless an offset says the snapshot completed; then stream.
* ``initial_only``: the same snapshot, no streaming.
* ``when_needed``: as ``initial``, and also when the stored resume token is no longer in the
  oplog (ChangeStreamHistoryLost): a new snapshot instead of an error.
* ``always``: a snapshot on every start, then stream.
* ``no_data`` (``never``): no snapshot; the first start streams from the current end of the
  oplog, or from ``capture.start.op.time`` when set (Debezium's startAtOperationTime, used
  only while no position is stored: a data snapshot stores one).

A stored offset resumes after its resume token; one with ``sec``/``ord`` and no token (a
stream's start position, streams/positions.py) starts at that operation time, as Debezium
does; either counts as a stored position in every mode.

An offset whose snapshot did not complete (`initsync`, or none of its own) means a new snapshot.
A connection error on the first start is final (a wrong URI or password must be fixed); later
it is retriable, the server being away for now.
"""

from __future__ import annotations

import logging
from typing import Any

from pymongo import errors

from headwater.config.connector_common import warn_unmatched
from headwater.config.output import DATASTREAM
from headwater.connectors.mongodb import connection
from headwater.connectors.mongodb.config import MongoDbConnectorConfig
from headwater.connectors.mongodb.datastream import DatastreamCodec, datastream_collection_schema
from headwater.connectors.mongodb.documents import CollectionCodec, collection_schema
from headwater.connectors.mongodb.fields import FieldSelector
from headwater.connectors.mongodb.pipeline import change_stream_pipeline
from headwater.connectors.mongodb.position import (
    INITSYNC,
    RESUME_TOKEN,
    SNAPSHOT_COMPLETED,
    offset_time,
    token_from_offset,
)
from headwater.connectors.mongodb.snapshot import SYSTEM_DATABASES, MongoDbSnapshotSource
from headwater.connectors.mongodb.streaming import (
    MongoDbStreamingSource,
    ResumeTokenLostError,
    history_lost,
)
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.source import ConnectorBase, RetriableError, StartPlan
from headwater.model.schema import TableId
from headwater.model.topic_naming import TopicNaming

log = logging.getLogger("headwater.connectors.mongodb")

KIND = "mongodb"


class MongoDbConnectorError(RuntimeError):
    """The deployment cannot be captured as configured."""


class MongoDbConnector(ConnectorBase):
    def __init__(self, config: MongoDbConnectorConfig, metrics: CaptureMetrics | None = None,
                 naming: TopicNaming | None = None) -> None:
        # Debezium's MongoDB partition is {"server_id": name}
        super().__init__(KIND, config.topic_prefix, {"server_id": config.topic_prefix},
                         metrics, naming)
        self.config = config
        self._selector = FieldSelector(config.field_exclude_list, config.field_renames)
        self._codecs: dict[tuple[str, str], CollectionCodec | DatastreamCodec] = {}
        self._datastream = config.output.event_format == DATASTREAM
        # watched even when not captured: source-channel signals and snapshot watermarks
        self.signal_collection = config.signals.data_collection or None

    # -- what every source shares ---------------------------------------------------------------

    def codec(self, database: str, collection: str) -> CollectionCodec | DatastreamCodec:
        """The collection's codec: Debezium's document envelope, or Datastream's `_id` and
        `payload` columns (connectors/mongodb/datastream.py)."""
        key = (database, collection)
        codec = self._codecs.get(key)
        if codec is None:
            fields = self._selector.for_collection(database, collection)
            codec = self._codecs[key] = (
                DatastreamCodec(datastream_collection_schema(database, collection), fields,
                                self.config.headwater_datastream_mongodb_json_mode)
                if self._datastream
                else CollectionCodec(collection_schema(database, collection), fields))
        return codec

    def watch_target(self, client: Any) -> Any:
        """What the change stream watches: the deployment, or capture.target's database."""
        if self.config.capture_scope == "database":
            return client[self.config.capture_target]
        return client

    def open_stream(self, client: Any, **kw: Any) -> Any:
        cfg = self.config
        options: dict[str, Any] = {}
        if cfg.full_document:
            options["full_document"] = ("whenAvailable"
                                        if cfg.capture_mode_full_update_type == "post_image"
                                        else "updateLookup")
        if cfg.pre_image:
            options["full_document_before_change"] = "whenAvailable"
        if cfg.cursor_max_await_time_ms:
            options["max_await_time_ms"] = cfg.cursor_max_await_time_ms
        # Batches of max.batch.size events (Debezium 3.6 leaves the server's default, up to
        # 16 MB): the stream reader (prefetch.py) fetches the next batch while the loop encodes
        # this one only when a batch fits its buffer; the events are the same.
        options["batch_size"] = cfg.max_batch_size
        options.update(kw)
        pipeline = change_stream_pipeline(cfg, self.signal_collection)
        return self.watch_target(client).watch(pipeline, **options)

    def current_token(self, client: Any) -> dict[str, Any]:
        """The resume token of the stream's current end: nothing before it is missed by a
        stream resumed after it."""
        with self.open_stream(client) as stream:
            token = stream.resume_token
            if token is None:  # a server that sends no post-batch token: wait for one
                stream.try_next()
                token = stream.resume_token
        if token is None:
            raise MongoDbConnectorError("the change stream returned no resume token")
        return dict(token)

    def captured_collections(self, client: Any) -> list[tuple[str, str]]:
        cfg = self.config
        names = ([cfg.capture_target] if cfg.capture_scope == "database" and cfg.capture_target
                 else client.list_database_names())
        out: list[tuple[str, str]] = []
        existing: list[str] = []
        for database in names:
            if database in SYSTEM_DATABASES or not cfg.database_filter(database):
                continue
            for collection in client[database].list_collection_names(
                    filter={"type": "collection"}):
                existing.append(f"{database}.{collection}")
                if not collection.startswith("system.") and cfg.collection_filter(
                        database, collection):
                    out.append((database, collection))
        warn_unmatched("collection.include.list", cfg.collection_include_list, existing, log,
                       "collection", literal=cfg.filters_match_mode == "literal")
        out.sort(key=lambda item: item[1])  # Debezium's snapshot order: by collection name
        # Debezium's MonitoredTables; a stream's backfill jobs follow them (streams/worker.py)
        self.metrics.monitored_tables = [f"{d}.{c}" for d, c in out]
        cfg.guardrail.check(self.metrics.monitored_tables, log)
        if self.naming is not None:
            self.naming.check_tables(TableId(d, None, c) for d, c in out)
        return out

    # -- start -----------------------------------------------------------------------------------

    def start(self, offset: dict[str, Any] | None) -> StartPlan:
        cfg = self.config
        log.info("connecting to %s", cfg.masked_connection_string())
        client = connection.client(cfg)
        try:
            try:
                client.admin.command("ping")
                plan = self._plan(client, offset)
                if not self.metrics.monitored_tables:  # no snapshot reads them: read here
                    self.captured_collections(client)
            except errors.PyMongoError as exc:
                message = connection.scrub(str(exc), cfg)
                if connection.transient(exc) and self._started:
                    raise RetriableError(f"MongoDB connection failed: {message}") from None
                if connection.transient(exc):
                    raise MongoDbConnectorError(
                        f"cannot connect to {cfg.masked_connection_string()}: {message}"
                    ) from None
                raise MongoDbConnectorError(message) from None
        finally:
            client.close()
        self._started = True
        return plan

    def _plan(self, client: Any, offset: dict[str, Any] | None) -> StartPlan:
        cfg = self.config
        mode = cfg.snapshot_mode
        streaming = None if mode == "initial_only" else MongoDbStreamingSource(self)
        token = offset.get(RESUME_TOKEN) if offset else None
        at = offset_time(offset)  # an offset holding an operation time, not a token
        completed = bool(offset and (token or at) and offset.get(SNAPSHOT_COMPLETED)
                         and not offset.get(INITSYNC))
        snapshot = MongoDbSnapshotSource(self)
        if mode == "always":
            return StartPlan(snapshot, streaming, data_snapshot=True)
        if mode == "no_data":
            if token is None and at is None and cfg.capture_start_op_time is not None:
                return StartPlan(None, streaming)  # streaming starts at the operation time
            if token is None and at is None:
                return StartPlan(MongoDbSnapshotSource(self, with_data=False), streaming)
            return StartPlan(None, streaming)
        if not completed:
            if offset and offset.get(INITSYNC):
                log.info("the previous snapshot did not complete: taking a new one")
            return StartPlan(snapshot, streaming, data_snapshot=True)
        if mode == "when_needed" and not self._resumable(client, token, at):
            log.warning("the stored position %s is no longer in the oplog: taking a new "
                        "snapshot (snapshot.mode=when_needed)", token or at)
            return StartPlan(snapshot, streaming, data_snapshot=True)
        if streaming is None:
            log.info("snapshot.mode=initial_only and the snapshot is complete: nothing to do")
        return StartPlan(None, streaming)

    def _resumable(self, client: Any, token: Any, at: Any = None) -> bool:
        """Whether the oplog still has the stored position (a resume token, or an operation
        time the server refuses when it is before the oplog's first entry)."""
        where = ({"resume_after": token_from_offset(str(token))} if token
                 else {"start_at_operation_time": at})
        try:
            with self.open_stream(client, max_await_time_ms=10, **where) as stream:
                stream.try_next()
        except errors.OperationFailure as exc:
            if history_lost(exc):
                return False
            raise
        return True

    def close(self) -> None:
        pass


__all__ = ["MongoDbConnector", "MongoDbConnectorError", "ResumeTokenLostError"]
