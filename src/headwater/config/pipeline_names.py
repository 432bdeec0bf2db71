"""The names of the pipeline's properties (`headwater.pipeline.*`; read by
`headwater.pipeline.config`).

Why the names live here: one file configures both the connector and the pipeline, so the
connector's "did you mean" hints (`headwater.config.definition`) must know the pipeline's names,
and the configuration must not import the Spark pipeline to learn them.
"""

from __future__ import annotations

from typing import Final

# Every headwater.pipeline.* property (also the connectors' "did you mean" hints).
PIPELINE_PROPERTIES: Final = (
    "headwater.pipeline.mode", "headwater.pipeline.delta.path",
    "headwater.pipeline.checkpoint.dir", "headwater.pipeline.topics",
    "headwater.pipeline.trigger.interval.ms", "headwater.pipeline.max.records.per.trigger",
    "headwater.pipeline.id", "headwater.pipeline.track.history.column.list",
    "headwater.pipeline.track.history.except.column.list", "headwater.pipeline.target",
    "headwater.pipeline.jdbc.url", "headwater.pipeline.jdbc.user",
    "headwater.pipeline.jdbc.password", "headwater.pipeline.jdbc.schema",
    "headwater.pipeline.schema.evolution", "headwater.pipeline.delta.compact.interval.batches",
    "headwater.pipeline.mongodb.nested", "headwater.pipeline.mongodb.flatten.struct",
    "headwater.pipeline.mongodb.flatten.struct.delimiter", "headwater.pipeline.source",
    "headwater.pipeline.datastream.files.dir", "headwater.pipeline.datastream.files.format",
    "headwater.pipeline.datastream.max.files.per.trigger",
    "headwater.pipeline.executors.min.records", "headwater.pipeline.delta.writer",
    "headwater.pipeline.iceberg.warehouse", "headwater.pipeline.iceberg.catalog",
    "headwater.pipeline.iceberg.compact.interval.batches",
)
