"""The pipeline's one Spark streaming source: positions over a store, never rows.

Spark checkpoints this source's offsets like any source's and plans the micro-batches; the
rows stay where they are.  An offset is a flat map `{name: next position}` and a micro-batch is
one row per name `(name, start, end)`: the runner usually takes a batch's ranges from the
query's offset log (`runner.checkpointed_ranges`) rather than collecting these rows, which would
cost a Spark job per batch, and reads them with the store's reader (`tasks`, `kafka_tasks`,
the files apply).  What differs by store is only where positions come from, a `Store`:

- `topics`: the local topic log, `{topic: next offset}` (`source.TopicLogPositions`);
- `kafka`: Kafka, `{"<topic>#<partition>": next offset}` (`kafka_source.KafkaPositions`);
- `files`: the files destination's directory, `{"files": lines of the file log}`
  (`datastream.file_source.FilePositions`).

The stores are named in `STORES` (the option `store` picks one) and imported by name: this
module is imported by each of Spark's Python data-source workers (the Reader's globals are
pickled by reference), so it imports nothing heavy, and a store only its own client.

Rate limiting: the option `max_records` caps the positions of a batch (records, or files),
Spark's `ReadMaxRows`; `Trigger.AvailableNow` fixes the end when the query starts
(`read_limits` says how on pyspark 4.1, which knows neither).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any, Final, Protocol

NAME: Final = "headwater_positions"
SCHEMA: Final = "topic STRING, start_offset LONG, end_offset LONG"

Offsets = dict[str, int]

# store name -> "module:class", each class built from the source's options
STORES: Final[Mapping[str, str]] = {
    "topics": "headwater.pipeline.source:TopicLogPositions",
    "kafka": "headwater.pipeline.kafka_source:KafkaPositions",
    "files": "headwater.pipeline.datastream.file_source:FilePositions",
}


class Store(Protocol):
    """Where a store's positions come from, as the source asks for them."""

    def initial(self) -> Offsets:
        """A new query's start."""
        ...

    def latest(self) -> Offsets:
        """The end of what is there now."""
        ...

    def plan(self, start: Offsets, latest: Offsets, rows: int | None) -> Offsets:
        """The end of the next batch from `start`, at most `rows` positions past it (None: no
        cap); raises where `latest` is behind `start` (positions the checkpoint has passed
        were removed: never skipped silently)."""
        ...

    def committed(self, end: Offsets) -> None:
        """Spark committed the batches up to `end`."""
        ...

    def close(self) -> None: ...


def store_for(options: Mapping[str, str]) -> Store:
    """The store the options name (`store`), built from them."""
    name = options.get("store", "")
    where = STORES.get(name)
    if where is None:
        raise ValueError(f"{NAME}: unknown store {name!r}; one of {', '.join(STORES)}")
    module, _, cls = where.partition(":")
    store: Store = getattr(importlib.import_module(module), cls)(options)
    return store


def ranges(start: Offsets, end: Offsets) -> list[tuple[str, int, int]]:
    """A batch's `(name, start, end)` rows: every name whose position moved."""
    return [(n, start.get(n, 0), e) for n, e in sorted(end.items()) if e > start.get(n, 0)]


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
        def __init__(self, name: str, start: int, end: int) -> None:
            self.name, self.start, self.end = name, start, end

    class Reader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        def __init__(self, options: Mapping[str, str]) -> None:
            self.store = store_for(options)
            rows = options.get("max_records")
            self.max_rows = int(rows) if rows else None
            self.starts = Starts(options.get("checkpoint"), self.max_rows,
                                 options.get("once") == "true")
            self.frozen: Offsets | None = None

        def initialOffset(self) -> Offsets:  # noqa: N802 (Spark's name)
            return self.store.initial()

        def getDefaultReadLimit(self) -> Any:  # noqa: N802
            return ReadMaxRows(self.max_rows) if self.max_rows else ReadAllAvailable()

        def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
            self.frozen = self.store.latest()

        def latestOffset(self, start: Offsets | None = None,  # noqa: N802
                         limit: Any = None) -> Offsets:
            start = self.starts.start(start, self.initialOffset,
                                      self.prepareForTriggerAvailableNow)
            latest = self.frozen if self.frozen is not None else self.store.latest()
            return self.starts.planned(
                self.store.plan(start or {}, latest, self.starts.rows(limit)))

        def partitions(self, start: Offsets, end: Offsets) -> list[Range]:
            return [Range(*r) for r in ranges(start or {}, end)]

        def read(self, partition: InputPartition) -> Iterator[tuple[str, int, int]]:
            assert isinstance(partition, Range)
            yield (partition.name, partition.start, partition.end)

        def commit(self, end: Offsets) -> None:
            self.store.committed(end)

        def stop(self) -> None:
            self.store.close()

    class Source(DataSource):
        @classmethod
        def name(cls) -> str:
            return NAME

        def schema(self) -> str:
            return SCHEMA

        def streamReader(self, schema: Any) -> Reader:  # noqa: N802
            return Reader(self.options)

    spark.dataSource.register(Source)
