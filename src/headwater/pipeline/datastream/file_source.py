"""The files destination's directory as the pipeline's Spark source sees it: positions over
the checkpoint's file log (`FilePositions`, the `files` store of `positions`).

An offset is `{"files": n}`, n lines of the checkpoint's file log (`files.FileLog`), and a
micro-batch is one row `("files", start, end)`.  Planning a batch lists the directory and
appends the files not seen before to the log (fsynced) before Spark checkpoints the offset,
so a file is taken once whatever folder or order it arrives in, and a batch replayed after a
crash reads the same files.  `Trigger.AvailableNow` fixes the set when the query starts;
`max_records` caps a batch's files (Spark's `ReadMaxRows`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from headwater.pipeline.datastream.files import OFFSET_KEY, FileLog, list_files


def plan_end(start: int, seen: int, max_files: int | None) -> int:
    """The end (file log lines) of the next batch."""
    end = max(start, seen)
    return end if max_files is None else min(end, start + max_files)


class FilePositions:
    """Lines of the file log at the option `log`, over the files of `format` under `path`."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.root = Path(options["path"])
        self.log_path = Path(options["log"])
        self.format = options.get("format", "auto")
        self.log: FileLog | None = None

    def initial(self) -> dict[str, int]:
        return {OFFSET_KEY: 0}

    def latest(self) -> dict[str, int]:
        if self.log is None:
            self.log = FileLog(self.log_path)
        return {OFFSET_KEY: self.log.add(list_files(self.root, self.format))}

    def plan(self, start: dict[str, int], latest: dict[str, int], rows: int | None
             ) -> dict[str, int]:
        return {OFFSET_KEY: plan_end(start.get(OFFSET_KEY, 0), latest[OFFSET_KEY], rows)}

    def committed(self, end: dict[str, int]) -> None:
        pass

    def close(self) -> None:
        pass
