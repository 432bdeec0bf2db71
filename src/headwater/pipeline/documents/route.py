"""Which topics take the document path, and that path's batch step for the runner.

A topic is MongoDB's when the configuration says so (`connector.class` MongoDB's: event model
documents, `PipelineConfig.event_model`).  A configuration naming no connector (one pipeline
over topics of several connectors) learns it from the topic's first event (`source.connector`
"mongodb"), remembered, so the relational connectors' topics pay one parsed record per topic
and run, not per batch (`runner.topic_model`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headwater.pipeline.documents.delta import DocumentTarget
from headwater.pipeline.documents.events import Record, decode_documents, is_document_event
from headwater.pipeline.documents.options import DocumentOptions
from headwater.pipeline.source import read_range

if TYPE_CHECKING:
    from headwater.pipeline.documents.iceberg import IcebergDocuments
    from headwater.pipeline.documents.jdbc import JdbcDocuments

log = logging.getLogger("headwater.pipeline.documents")

_KNOWN: dict[tuple[str, str], bool] = {}


def is_document_topic(root: Path, topic: str, first: int, end: int) -> bool:
    """Whether the topic's events are MongoDB's (judged by the range's first event)."""
    known = _KNOWN.get((str(root), topic))
    if known is not None:
        return known
    for _offset, _key, value in read_range(root, topic, first, end):
        if value is not None:
            found = _KNOWN[(str(root), topic)] = is_document_event(value)
            return found
    return False  # only tombstones so far: nothing to apply either way


def _writer(target: Any, options: DocumentOptions
            ) -> DocumentTarget | JdbcDocuments | IcebergDocuments:
    """The target's document storage (the rules are `flow`'s, one for all)."""
    from headwater.pipeline.iceberg_target import IcebergTarget
    from headwater.pipeline.jdbc_target import JdbcTarget

    if isinstance(target, IcebergTarget):
        from headwater.pipeline.documents.iceberg import IcebergDocuments

        return IcebergDocuments(target, options)
    if isinstance(target, JdbcTarget):
        from headwater.pipeline.documents.jdbc import JdbcDocuments

        return JdbcDocuments(target, options)
    return DocumentTarget(target, options)


def apply_documents(
    topic: str, records: Iterable[Record], batch_id: int, mode: str, target: Any,
    options: DocumentOptions, track: tuple[str, ...] | None = None,
    track_except: tuple[str, ...] | None = None,
) -> int:
    """Applies one MongoDB topic's records of a batch (offset, key, value: the local log's
    range or Kafka's partitions, each in offset order) in `mode` into a Delta, Iceberg or JDBC
    target; returns the number of events."""
    batch = decode_documents(topic, records)
    if not batch.events:
        return 0
    writer = _writer(target, options)
    if mode == "changelog":
        writer.append_changelog(batch, batch_id)
    elif mode == "scd2":
        writer.apply_scd2(batch, batch_id, track, track_except)
    else:
        writer.apply_scd1(batch, batch_id)
    log.info("batch %d: %s: %d document events applied (%s)", batch_id, topic,
             len(batch.events), mode)
    return len(batch.events)
