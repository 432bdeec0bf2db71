"""Spark's read limits for the Python streaming sources, on every pyspark the pipeline runs on.

pyspark 4.2 added admission control to Python streaming sources
(`pyspark.sql.streaming.datasource`: `latestOffset(start, limit)`, `ReadMaxRows`,
`SupportsTriggerAvailableNow`).  pyspark 4.1, the one Spark line with Delta Lake, Iceberg and
the Kafka source (see `headwater.jvm.artifacts`), calls `latestOffset()` without arguments and
knows none of these: there a source's `latestOffset` gets no start and no limit, so a
micro-batch takes everything available (`headwater.pipeline.max.records.per.trigger` and
`max.files.per.trigger` are not applied), and `Trigger.AvailableNow` freezes the end itself.
Imported only inside the sources' `register` (it imports pyspark).
"""

from __future__ import annotations

from typing import TYPE_CHECKING


class _ReadAllAvailable:
    """Every offset available (the only limit pyspark 4.1 applies)."""


class _ReadMaxRows:
    """A cap of rows per micro-batch (never handed over by pyspark 4.1)."""

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows


class _SupportsTriggerAvailableNow:
    """A marker pyspark 4.1 does not look for."""

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 (Spark's name)
        return None


if TYPE_CHECKING:
    ReadAllAvailable = _ReadAllAvailable
    ReadMaxRows = _ReadMaxRows
    SupportsTriggerAvailableNow = _SupportsTriggerAvailableNow
else:
    try:
        from pyspark.sql.streaming.datasource import (
            ReadAllAvailable,
            ReadMaxRows,
            SupportsTriggerAvailableNow,
        )
    except ImportError:  # pyspark 4.1: no admission control for Python sources
        ReadAllAvailable = _ReadAllAvailable
        ReadMaxRows = _ReadMaxRows
        SupportsTriggerAvailableNow = _SupportsTriggerAvailableNow

ADMISSION_CONTROL: bool = ReadMaxRows is not _ReadMaxRows

__all__ = ["ADMISSION_CONTROL", "ReadAllAvailable", "ReadMaxRows",
           "SupportsTriggerAvailableNow"]
