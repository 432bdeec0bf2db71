"""Spark's read limits for the Python streaming sources, on every pyspark the pipeline runs on.

pyspark 4.2 added admission control to Python streaming sources
(`pyspark.sql.streaming.datasource`: `latestOffset(start, limit)`, `ReadMaxRows`,
`SupportsTriggerAvailableNow`).  pyspark 4.1, the one Spark line with Delta Lake, Iceberg and
the Kafka source (see `headwater.jvm.artifacts`), calls `latestOffset()` without arguments and
knows none of these: there a source's `latestOffset` gets no start and no limit.  `Starts`
gives it both: the start is where the batch it planned last ends (Spark always takes a
source's latest offset as the end of the next batch), or, first in a restarted query, the end
of the last batch in the query's own offset log; the limit is the source's own setting.
pyspark 4.1 also runs a Python source under `Trigger.AvailableNow` as `Trigger.Once`: one
micro-batch, and after a crash only the uncommitted batch is re-run, nothing after it.  So a
`--once` run on 4.1 is run as Spark runs AvailableNow for sources that support it: the source
fixes its end at its first planning (`prepareForTriggerAvailableNow`), the query runs with a
processing-time trigger, still limited per batch, and the runner stops it once everything up
to that end is committed (`once_trigger`, `finish_when_caught_up`).  Imported only inside the
sources' `register` (it imports pyspark).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

Offsets = dict[str, int]


def last_planned_end(checkpoint: Path) -> Offsets | None:
    """The end offsets of the newest batch in a query's offset log (`offsets/<id>`: `v1`, the
    batch's metadata, then one line per source, here the only source), None without one."""
    folder = checkpoint / "offsets"
    ids = sorted((int(p.name) for p in folder.iterdir() if p.name.isdigit()),
                 reverse=True) if folder.is_dir() else []
    for batch in ids:
        try:
            lines = (folder / str(batch)).read_text().splitlines()
            offsets = json.loads(lines[2]) if len(lines) == 3 and lines[0] == "v1" else None
        except (OSError, UnicodeDecodeError, ValueError):
            offsets = None
        if isinstance(offsets, dict):
            return {str(k): int(v) for k, v in offsets.items()}
        raise ValueError(f"{folder / str(batch)}: not a one-source offset log entry of "
                         "Spark's (v1); cannot tell where this pipeline's next batch starts")
    return None


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


class Starts:
    """A source's start offsets and read limit where pyspark (4.1) does not hand them over;
    where it does, what it hands over, untouched."""

    def __init__(self, checkpoint: str | None, limit: int | None, once: bool) -> None:
        self.checkpoint = Path(checkpoint) if checkpoint else None
        self.limit = limit
        self.next: Offsets | None = None
        # A --once run on 4.1: the end is fixed by the source itself at its first planning.
        self.freeze = once and not ADMISSION_CONTROL

    def start(self, given: Offsets | None, initial: Callable[[], Offsets],
              freeze: Callable[[], None] | None = None) -> Offsets:
        """Where the batch being planned starts; `initial` (the source's `initialOffset`,
        which may list the whole log) is asked only for a new query's first batch; `freeze`
        (the source's `prepareForTriggerAvailableNow`) is called once, first, in a --once run
        on a pyspark that does not call it."""
        if self.freeze and freeze is not None:
            self.freeze = False
            freeze()
        if ADMISSION_CONTROL or given is not None:
            return given or {}
        if self.next is None:
            found = last_planned_end(self.checkpoint) if self.checkpoint else None
            self.next = found if found is not None else dict(initial())
        return self.next

    def rows(self, limit: object) -> int | None:
        """The cap on this batch: Spark's read limit, or on 4.1 the source's own."""
        if isinstance(limit, ReadMaxRows):
            return int(limit.max_rows)
        return None if ADMISSION_CONTROL else self.limit

    def planned(self, end: Offsets) -> Offsets:
        """`end` is the next batch's end, so the batch after it starts there."""
        if not ADMISSION_CONTROL:
            self.next = dict(end)
        return end

def once_trigger() -> dict[str, str | bool]:
    """The trigger of a --once run: AvailableNow where pyspark runs it for Python sources,
    else back-to-back micro-batches that `finish_when_caught_up` stops."""
    return {"availableNow": True} if ADMISSION_CONTROL else {"processingTime": "0 seconds"}


def finish_when_caught_up(query: Any) -> None:
    """Stops a --once query on pyspark 4.1 once every offset up to the sources' fixed end is
    committed (`processAllAvailable` returns when a trigger finds nothing new, and the source's
    latest offset no longer moves); a thread, so callers keep calling `awaitTermination`.  A
    failed query is left to `awaitTermination` to raise."""
    if ADMISSION_CONTROL:
        return

    def finish() -> None:
        try:
            query.processAllAvailable()
        except Exception:  # the query failed: awaitTermination raises it
            return
        query.stop()

    threading.Thread(target=finish, name="headwater-once", daemon=True).start()


__all__ = ["ADMISSION_CONTROL", "ReadAllAvailable", "ReadMaxRows", "Starts",
           "SupportsTriggerAvailableNow", "finish_when_caught_up", "last_planned_end",
           "once_trigger"]
