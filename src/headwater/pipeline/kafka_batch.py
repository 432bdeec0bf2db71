"""Applies one micro-batch read from Kafka: the Kafka twin of `runner.apply_batch`.

Same decoders and targets as the local log.  A topic with many records in the batch is read,
decoded and netted on the executors (`kafka_tasks`, a slice a task); otherwise the
driver fetches the ranges of all its partitions together (one net change per key needs all of
a topic's events of the batch; a key's events are all in one partition, so their order is
kept), and they go column-wise when the batch has the common shape, else event by event.
Either way the records reach the column-wise decoder as Arrow binary arrays cut into lines by
their buffers (`arrow_lines`).  MongoDB's document topics and Datastream events go through
the appliers the local log's topics use (`documents.route`, `datastream.apply`), read by the
driver; their model is the configuration's, or learnt from a topic's first value.
"""

from __future__ import annotations

import itertools
import logging
import operator
import time
from collections.abc import Mapping
from typing import Any, TypeAlias, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from headwater.pipeline import columnar
from headwater.pipeline import scan_kernel as kernel
from headwater.pipeline.config import PipelineConfig
from headwater.pipeline.decode import decode_topic
from headwater.pipeline.kafka_source import (
    Columns,
    KafkaTopics,
    ValueDecoder,
    group_ranges,
    join_chunks,
    json_decoder,
    slot,
)

log = logging.getLogger("headwater.pipeline.kafka")


_SCHEMA = b'{"schema":'
_PAYLOAD = b',"payload":'
_CLOSE = ord("}")
# a binary column, whole or as the chunks of Arrow batches
Binary: TypeAlias = pa.Array | pa.ChunkedArray


def lines(records: list[tuple[int, bytes | None, bytes | None]]) -> columnar.Lines:
    """The column-wise decoder's input from fetched records (`arrow_lines` over them)."""
    return column_lines([o for o, _k, _v in records], [k for _o, k, _v in records],
                        [v for _o, _k, v in records])


def column_lines(offsets: list[int], keys: list[bytes | None], values: list[bytes | None]
                 ) -> columnar.Lines:
    """`lines` from the three lists `KafkaTopics.fetch_columns` gives."""
    return arrow_lines(np.array(offsets, np.int64), binary_array(keys), binary_array(values))


class _Fetched:
    """A topic's records as `KafkaTopics.fetch_chunks` gives them, kept per partition, each
    chunk cut into the column-wise decoder's lines as it arrives (while the client fetches the
    next ones: the cut overlaps the wait for the brokers, where cutting the whole batch after
    the fetch added to it).  The first chunk outside the column-wise shape stops the cutting
    (its NotColumnar is raised by `lines`); the records stay for the event-by-event path."""

    def __init__(self, cut: bool) -> None:
        self.chunks: dict[int, list[Columns]] = {}
        self.pieces: dict[int, list[columnar.Lines]] = {}
        self.refused: columnar.NotColumnar | None = None if cut else columnar.NotColumnar("")

    def add(self, partition: int, chunk: Columns) -> None:
        self.chunks.setdefault(partition, []).append(chunk)
        if self.refused is None:
            try:
                piece = column_lines(*chunk)
            except columnar.NotColumnar as exc:
                self.refused = exc
                self.pieces.clear()
            else:
                self.pieces.setdefault(partition, []).append(piece)

    def columns(self) -> Columns:
        """Every record, partition after partition, in offset order."""
        return join_chunks((p, c) for p, chunks in self.chunks.items() for c in chunks)

    def first_value(self) -> bytes | None:
        """The first record's value that is not a tombstone, in `columns`' order."""
        return next((v for p in sorted(self.chunks) for c in self.chunks[p] for v in c[2]
                     if v is not None), None)

    def lines(self) -> columnar.Lines:
        """The lines of every chunk, partition after partition (as `lines` over `columns`
        would cut them): NotColumnar when a chunk was refused or the chunks' schemas differ."""
        if self.refused is not None:
            raise self.refused
        pieces = [piece for p in sorted(self.pieces) for piece in self.pieces[p] if piece.count]
        out = columnar.Lines()
        if not pieces:
            return out
        out.key_head, out.value_head = pieces[0].key_head, pieces[0].value_head
        if any(x.key_head != out.key_head or x.value_head != out.value_head for x in pieces):
            raise columnar.NotColumnar("another schema or a null key")
        if len(pieces) == 1:
            return pieces[0]
        out.offsets = np.concatenate([x.offsets for x in pieces])
        out.key_lines = np.concatenate([x.key_lines for x in pieces])
        out.value_lines = np.concatenate([x.value_lines for x in pieces])
        return out


def binary_array(items: list[bytes | None]) -> pa.Array:
    """A large_binary Arrow array of `items` (None: null) built from their joined bytes and
    their lengths, without a Python step per item: `pa.array` over the list took 1.5 s of the
    bench's 52k-record Kafka batch (~3 s for 52k values of 1.3 kB measured alone, under load),
    the join and lengths 0.2 s."""
    n = len(items)
    nulls = items.count(None)
    validity = None
    full = cast(list[bytes], items)
    if nulls:
        valid = np.fromiter(map(operator.is_not, items, itertools.repeat(None)), bool, n)
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        full = [b"" if v is None else v for v in items]
    ends = np.zeros(n + 1, np.int64)
    np.cumsum(np.fromiter(map(len, full), np.int64, n), out=ends[1:])
    data = b"".join(full)
    return pa.Array.from_buffers(pa.large_binary(), n,
                                 [validity, pa.py_buffer(ends), pa.py_buffer(data)], nulls)


def arrow_lines(offsets: np.ndarray, keys: Binary, values: Binary) -> columnar.Lines:
    """The column-wise decoder's input from records as Arrow binary arrays (Spark's Kafka
    source gives them so, as chunked columns of its Arrow batches), without a Python step per
    record and without first copying the chunks into one array: every key and every value
    must start with the first one's document head (`{"schema":...,"payload":`, checked by one
    vectorized comparison) and end with the envelope's `}`, else NotColumnar and the batch
    goes event by event.  The payloads are cut out of each chunk's data buffer by its offsets
    straight into the lines (`scan_kernel.gather_lines_into`, as the local log's scan gathers
    its lines, a newline written as a space on the way).
    Tombstones (null values) carry nothing to apply and are skipped, as `columnar.scan` skips
    them: by a mask over the offsets, the data stays where it is."""
    out = columnar.Lines()
    live: np.ndarray | None = None
    if values.null_count:
        live = np.asarray(pc.is_valid(values).to_numpy(zero_copy_only=False), bool)
        offsets = offsets[live]
    if not len(offsets):
        return out
    if keys.null_count and (live is None or not np.asarray(
            pc.is_valid(keys).to_numpy(zero_copy_only=False), bool)[live].all()):
        raise columnar.NotColumnar("another schema or a null key")
    first = 0 if live is None else int(np.argmax(live))
    key_head = _head(keys[first].as_py())
    value_head = _head(values[first].as_py())
    out.key_head = key_head
    out.value_head = b'},"value":' + value_head
    out.offsets = np.ascontiguousarray(offsets, np.int64)
    out.key_lines = _payloads(keys, key_head, live)
    out.value_lines = _payloads(values, value_head, live)
    return out


def _head(document: bytes) -> bytes:
    at = document.find(_PAYLOAD)
    if at < 0 or not document.startswith(_SCHEMA):
        raise columnar.NotColumnar("value without an embedded schema")
    return document[:at + len(_PAYLOAD)]


def _payloads(array: Binary, head: bytes, live: np.ndarray | None) -> np.ndarray:
    """Each live document's payload (between `head` and its final `}`) and a newline, chunk
    after chunk into one buffer."""
    try:
        pattern = head.decode()
    except UnicodeDecodeError as exc:
        raise columnar.NotColumnar("a schema that is not UTF-8") from exc
    if not pc.all(pc.starts_with(array, pattern=pattern)).as_py():  # (nulls: tombstones)
        raise columnar.NotColumnar("another schema or a null key")
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    cuts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    at = 0
    for chunk in chunks:
        data, begin, end = _bounds(chunk, len(head))
        if live is not None:
            keep = live[at:at + len(chunk)]
            begin, end = begin[keep], end[keep]
        at += len(chunk)
        if (end < begin).any() or (data[end] != _CLOSE).any():
            raise columnar.NotColumnar("document layout")
        cuts.append((data, begin, end))
    lines = np.empty(sum(int((e - b).sum()) + len(b) for _d, b, e in cuts), np.uint8)
    pos = 0
    for data, begin, end in cuts:  # (a newline, JSON whitespace, becomes a space: lines)
        pos += kernel.gather_lines_into(data, begin, end, lines[pos:])
    return lines


def _bounds(chunk: pa.Array, skip: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A binary chunk's data buffer (a view) and where each document's payload begins (after
    `skip` bytes of head) and ends (its last byte, the envelope's closing brace)."""
    wide = pa.types.is_large_binary(chunk.type)
    buffers = chunk.buffers()
    bounds = np.frombuffer(buffers[1], np.int64 if wide else np.int32)[
        chunk.offset:chunk.offset + len(chunk) + 1].astype(np.int64)
    data = np.frombuffer(buffers[2], np.uint8) if buffers[2] is not None else \
        np.empty(0, np.uint8)
    return data, bounds[:-1] + skip, bounds[1:] - 1


def is_document_value(value: bytes) -> bool:
    from headwater.pipeline.documents.events import is_document_event

    return bool(is_document_event(value))


def value_model(value: bytes) -> str:
    """The event model one record value shows: MongoDB documents, Datastream events, else
    Debezium rows (a value that is no JSON at all is left to the rows decoder, which says
    what is wrong with it)."""
    import orjson

    from headwater.pipeline import capabilities
    from headwater.pipeline.datastream.events import is_datastream_event

    if is_document_value(value):
        return capabilities.DOCUMENTS
    try:
        if is_datastream_event(orjson.loads(value)):
            return capabilities.DATASTREAM
    except orjson.JSONDecodeError:
        pass
    return capabilities.ROWS


# Event models learnt from a topic's records, per (brokers, topic), for configurations that
# declare none: a topic pays one look at its first value per run, not per batch.
_LEARNT: dict[tuple[str, str], str] = {}


def known_model(topics: KafkaTopics, cfg: PipelineConfig, topic: str) -> str | None:
    """The topic's event model when the configuration declares it or a batch learnt it."""
    return cfg.event_model or _LEARNT.get((topics.config.get("bootstrap.servers", ""), topic))


def topic_model(topics: KafkaTopics, cfg: PipelineConfig, topic: str,
                value: bytes | None) -> str:
    """The event model of a Kafka topic: the configuration's; when it declares none (a
    pipeline-only file over mixed topics), learnt from the topic's first value (`value`)
    and checked against the capabilities table as a declared one is at start."""
    import dataclasses

    from headwater.pipeline import capabilities
    from headwater.pipeline.config import capability_cell

    known = known_model(topics, cfg, topic)
    if known is not None:
        return known
    if value is None:  # only tombstones so far: nothing to apply either way
        return capabilities.ROWS
    model = value_model(value)
    if model != capabilities.ROWS:
        capabilities.require(dataclasses.replace(capability_cell(cfg), model=model))
    _LEARNT[(topics.config.get("bootstrap.servers", ""), topic)] = model
    return model


def apply_kafka_batch(topics: KafkaTopics, ranges: Mapping[str, tuple[int, int]],
                      batch_id: int, cfg: PipelineConfig, target: Any,
                      decode: ValueDecoder = json_decoder, spark: Any = None) -> int:
    """Applies one micro-batch (`{topic#partition: (start, end)}`); the number of events.

    With a Spark session, the column-wise modes read, decode and net on the executors
    (`kafka_tasks`: one Spark job for the batch's topics, a slice a task) every topic
    with at least `headwater.pipeline.executors.min.records` records in the batch, as the
    local log's batches do (`runner.apply_batch`); the driver reads the rest, and every topic
    the stage leaves to it, with confluent-kafka."""
    from headwater.pipeline.runner import apply_staged, columnar_path
    from headwater.pipeline.tasks import clear_staging

    total = 0
    path = columnar_path(cfg.mode, target, cfg)
    grouped = group_ranges(ranges)
    staged = _run_stage(spark, topics, grouped, batch_id, cfg) if path is not None else {}
    for topic, parts in sorted(grouped.items()):
        if topic in staged and path is not None:
            n = apply_staged(spark, topic, staged[topic], batch_id, cfg, path[1], target)
            if n is not None:
                total += n
                continue
        total += _apply_topic(topics, topic, parts, batch_id, cfg, target, decode)
    if staged:
        clear_staging(cfg.checkpoint_dir, upto=batch_id)
    return total


def _apply_other_model(model: str, topic: str, records: _Fetched, batch_id: int,
                       cfg: PipelineConfig, target: Any) -> int:
    """A topic of MongoDB documents or Datastream events: its records, every partition's
    in offset order, through the appliers the local log's topics use."""
    from headwater.pipeline import capabilities
    from headwater.pipeline.datastream.apply import apply_events
    from headwater.pipeline.datastream.events import raw_events
    from headwater.pipeline.documents.route import apply_documents

    fetched = list(zip(*records.columns(), strict=True))
    track, track_except = cfg.track_history_column_list, cfg.track_history_except_column_list
    if model == capabilities.DATASTREAM:
        return apply_events(raw_events(fetched), topic, batch_id, cfg.mode, target, track,
                            track_except)
    return apply_documents(topic, fetched, batch_id, cfg.mode, target, cfg.documents, track,
                           track_except)


def _run_stage(spark: Any, topics: KafkaTopics,
               grouped: Mapping[str, Mapping[int, tuple[int, int]]], batch_id: int,
               cfg: PipelineConfig) -> dict[str, list[Any]]:
    """The executor stage's results per topic (empty: the driver reads the batch)."""
    from headwater.pipeline import kafka_tasks

    if spark is None:
        return {}
    from headwater.pipeline import capabilities

    floor = max(cfg.executors_min_records, 1)
    # Debezium rows only (documents and Datastream events are applied by the driver)
    chosen = {slot(t, p): r for t, parts in grouped.items()
              if sum(e - s for s, e in parts.values()) >= floor
              and known_model(topics, cfg, t) in (None, capabilities.ROWS)
              for p, r in parts.items()}
    if not chosen:
        return {}
    try:
        return kafka_tasks.run_stage(spark, topics.config, cfg.checkpoint_dir, batch_id,
                                     cfg.mode, chosen, dict(cfg.converter_props))
    except Exception as exc:  # (the driver's reader meets a real problem again, and says it)
        log.warning("batch %d: the executors' Kafka read failed, the driver reads the batch: %s",
                    batch_id, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return {}


def _apply_topic(topics: KafkaTopics, topic: str, parts: Mapping[int, tuple[int, int]],
                 batch_id: int, cfg: PipelineConfig, target: Any, decode: ValueDecoder) -> int:
    """One topic's ranges read by the driver: Debezium rows column-wise or event by event,
    MongoDB documents and Datastream events by their own appliers (as from the local log)."""
    from headwater.pipeline import capabilities
    from headwater.pipeline.runner import apply_changes, columnar_path

    t0 = time.monotonic()
    path = columnar_path(cfg.mode, target, cfg)
    rows = known_model(topics, cfg, topic) in (None, capabilities.ROWS)
    records = _Fetched(path is not None and rows)
    for partition, chunk in topics.fetch_chunks(topic, parts, decode):
        records.add(partition, chunk)
    model = topic_model(topics, cfg, topic, records.first_value())
    if model != capabilities.ROWS:
        return _apply_other_model(model, topic, records, batch_id, cfg, target)
    if path is not None:
        decoder, write = path
        try:
            decoded = decoder(topic, records.lines())
        except columnar.NotColumnar as exc:
            log.info("batch %d: %s: event by event (%s)", batch_id, topic, exc)
        else:
            if decoded is None:
                return 0
            write(decoded, batch_id)
            log.info("batch %d: %s: %d events column-wise in %.2fs", batch_id, topic,
                     decoded.events, time.monotonic() - t0)
            return int(decoded.events)
    changes = decode_topic(topic, list(zip(*records.columns(), strict=True)))
    if not changes.events:
        return 0
    apply_changes(changes, batch_id, target, cfg.mode, cfg.track_history_column_list,
                  cfg.track_history_except_column_list)
    return len(changes.events)
