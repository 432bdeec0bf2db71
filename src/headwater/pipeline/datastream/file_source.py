"""The `headwater_datastream_files` Spark streaming source: offsets over the file log.

Like the topic source (`pipeline.source`), it hands Spark only positions, never rows: an
offset is `{"files": n}`, n lines of the checkpoint's file log (`files.FileLog`), and a
micro-batch is one row `("files", start, end)`.  Planning a batch lists the directory and
appends the files not seen before to the log (fsynced) before Spark checkpoints the offset,
so a file is taken once whatever folder or order it arrives in, and a batch replayed after a
crash reads the same files.  `Trigger.AvailableNow` fixes the set when the query starts;
`max_files` caps a batch (Spark's `ReadMaxRows`, counting files).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from headwater.pipeline.datastream.files import OFFSET_KEY, FileLog, list_files

NAME = "headwater_datastream_files"
SCHEMA = "topic STRING, start_offset LONG, end_offset LONG"


def plan_end(start: int, seen: int, max_files: int | None) -> int:
    """The end (file log lines) of the next batch."""
    end = max(start, seen)
    return end if max_files is None else min(end, start + max_files)


def register(spark: Any) -> None:
    """Registers the source with a Spark session."""
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

    from headwater.pipeline.read_limits import (
        ReadAllAvailable,
        ReadMaxRows,
        Starts,
        SupportsTriggerAvailableNow,
    )

    class Range(InputPartition):
        def __init__(self, start: int, end: int) -> None:
            self.start, self.end = start, end

    class Reader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        def __init__(self, options: Mapping[str, str]) -> None:
            self.root = Path(options["path"])
            self.log_path = Path(options["log"])
            self.format = options.get("format", "auto")
            files = options.get("max_files")
            self.max_files = int(files) if files else None
            self.starts = Starts(options.get("checkpoint"), self.max_files,
                                 options.get("once") == "true")
            self.log: FileLog | None = None
            self.frozen: int | None = None

        def _scan(self) -> int:
            if self.log is None:
                self.log = FileLog(self.log_path)
            return self.log.add(list_files(self.root, self.format))

        def initialOffset(self) -> dict[str, int]:  # noqa: N802 (Spark's name)
            return {OFFSET_KEY: 0}

        def getDefaultReadLimit(self) -> Any:  # noqa: N802
            return ReadMaxRows(self.max_files) if self.max_files else ReadAllAvailable()

        def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
            self.frozen = self._scan()

        def latestOffset(self, start: dict[str, int] | None = None,  # noqa: N802
                         limit: Any = None) -> dict[str, int]:
            start = self.starts.start(start, self.initialOffset,
                                      self.prepareForTriggerAvailableNow)
            seen = self.frozen if self.frozen is not None else self._scan()
            return self.starts.planned({OFFSET_KEY: plan_end(
                start.get(OFFSET_KEY, 0), seen, self.starts.rows(limit))})

        def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[Range]:
            first, last = (start or {}).get(OFFSET_KEY, 0), end[OFFSET_KEY]
            return [Range(first, last)] if last > first else []

        def read(self, partition: InputPartition) -> Iterator[tuple[str, int, int]]:
            assert isinstance(partition, Range)
            yield (OFFSET_KEY, partition.start, partition.end)

        def commit(self, end: dict[str, int]) -> None:
            pass

    class Source(DataSource):
        @classmethod
        def name(cls) -> str:
            return NAME

        def schema(self) -> str:
            return SCHEMA

        def streamReader(self, schema: Any) -> Reader:  # noqa: N802
            return Reader(self.options)

    spark.dataSource.register(Source)
