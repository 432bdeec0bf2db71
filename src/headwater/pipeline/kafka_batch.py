"""Applies one micro-batch read from Kafka: the Kafka twin of `runner.apply_batch`.

Same decoders and targets as the local log: per topic, the ranges of all its partitions are
fetched together (one net change per key needs all of a topic's events of the batch; a key's
events are all in one partition, so their order is kept) and go column-wise when the batch has
the common shape, else event by event.  MongoDB's document topics are not read from Kafka yet.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from headwater.pipeline import columnar
from headwater.pipeline.config import PipelineConfig
from headwater.pipeline.decode import decode_topic
from headwater.pipeline.kafka_source import KafkaTopics, ValueDecoder, group_ranges, json_decoder

log = logging.getLogger("headwater.pipeline.kafka")


def lines(records: list[tuple[int, bytes | None, bytes | None]]) -> columnar.Lines:
    """The column-wise decoder's input from fetched records: every record must share one key
    schema and one value schema (else NotColumnar: the batch goes event by event)."""
    out = columnar.Lines()
    key_parts: list[bytes] = []
    value_parts: list[bytes] = []
    offsets: list[int] = []
    key_head = value_head = b""
    for offset, key, value in records:
        if value is None:
            continue  # tombstones carry nothing to apply (as `columnar.scan` skips them)
        if key is None:
            raise columnar.NotColumnar("another schema or a null key")
        kp = key.find(b',"payload":')
        vp = value.find(b',"payload":')
        if kp < 0 or vp < 0 or not key.startswith(b'{"schema":') or \
                not value.startswith(b'{"schema":'):
            raise columnar.NotColumnar("value without an embedded schema")
        kh, vh = key[:kp + 11], value[:vp + 11]
        if not key_head:
            key_head, value_head = kh, vh
        elif kh != key_head or vh != value_head:
            raise columnar.NotColumnar("another schema or a null key")
        key_parts.append(key[kp + 11:key.rindex(b"}")].replace(b"\n", b" "))
        value_parts.append(value[vp + 11:value.rindex(b"}")].replace(b"\n", b" "))
        offsets.append(offset)
    if not offsets:
        return out
    out.key_head = key_head
    out.value_head = b'},"value":' + value_head
    out.offsets = np.array(offsets, dtype=np.int64)
    out.key_lines = np.frombuffer(b"\n".join(key_parts) + b"\n", np.uint8)
    out.value_lines = np.frombuffer(b"\n".join(value_parts) + b"\n", np.uint8)
    return out


def is_document_value(value: bytes) -> bool:
    from headwater.pipeline.documents.events import is_document_event

    return bool(is_document_event(value))


def apply_kafka_batch(topics: KafkaTopics, ranges: Mapping[str, tuple[int, int]],
                      batch_id: int, cfg: PipelineConfig, target: Any,
                      decode: ValueDecoder = json_decoder) -> int:
    """Applies one micro-batch (`{topic#partition: (start, end)}`); the number of events."""
    from headwater.pipeline.runner import apply_changes, columnar_path

    total = 0
    path = columnar_path(cfg.mode, target)
    for topic, parts in sorted(group_ranges(ranges).items()):
        t0 = time.monotonic()
        records = topics.fetch(topic, parts, decode)
        first = next((v for _, _, v in records if v is not None), None)
        if first is not None and is_document_value(first):
            raise ValueError(f"topic {topic}: MongoDB topics are not read from Kafka yet "
                             "(headwater.topics.store=local)")
        if path is not None:
            decoder, write = path
            try:
                decoded = decoder(topic, lines(records))
            except columnar.NotColumnar as exc:
                log.info("batch %d: %s: event by event (%s)", batch_id, topic, exc)
            else:
                if decoded is not None:
                    write(decoded, batch_id)
                    total += decoded.events
                    log.info("batch %d: %s: %d events column-wise in %.2fs", batch_id, topic,
                             decoded.events, time.monotonic() - t0)
                continue
        changes = decode_topic(topic, records)
        if not changes.events:
            continue
        total += len(changes.events)
        apply_changes(changes, batch_id, target, cfg.mode, cfg.track_history_column_list,
                      cfg.track_history_except_column_list)
    return total
