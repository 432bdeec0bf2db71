"""Headwater for users who write their own Spark code.

`register(spark)` makes the `headwater` source known to a session: then
`spark.read.format("headwater")` and `spark.readStream.format("headwater")` read a topic log's
change events as typed rows (docs/spark-source.md; `headwater.pipeline.change_source`)."""

from __future__ import annotations

from typing import Any

from headwater.pipeline.change_source import META, NAME, SOURCE_TABLE, TOPIC
from headwater.pipeline.change_source import register as _register

__all__ = ["META", "NAME", "SOURCE_TABLE", "TOPIC", "register"]


def register(spark: Any) -> None:
    """Registers the `headwater` data source (batch and streaming) with `spark`."""
    _register(spark)
