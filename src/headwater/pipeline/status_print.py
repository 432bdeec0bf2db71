"""`headwater status` of a pipeline: its status file, for a person.

Why apart from `status.py`: printing needs rich and the liveness rules of `ops/status.py`;
the pipeline's hot path (writing the file after each batch) needs neither.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from headwater.ops.progress import read_status
from headwater.ops.status import liveness
from headwater.pipeline.status import freshness_s


def print_pipeline_status(path: Path, console: Console) -> bool:
    """Prints the pipeline's state and metrics; True when its process is alive."""
    doc: dict[str, Any] | None = read_status(path)
    if doc is None:
        console.print(f"no pipeline status at {path} (has `headwater pipeline` started?)")
        return False
    live = liveness(doc)
    name = doc.get("pipeline", "?")
    if live.alive:
        console.print(f"pipeline {name}: {live.state} (pid {doc['pid']}, status written "
                      f"{live.age_s:.0f}s ago)", soft_wrap=True)
    else:
        console.print(f"pipeline {name}: {live.state}: {live.reason}; last written "
                      f"{live.age_s:.0f}s ago; the numbers below are the last it wrote",
                      soft_wrap=True)
    if doc.get("error"):
        console.print(f"error: {doc['error']}", soft_wrap=True, highlight=False)
    fresh = freshness_s(doc)
    duration = doc.get("last_batch_duration_s")
    console.print(f"batches committed: {doc.get('batches', 0)}, changes applied: "
                  f"{doc.get('changes_applied', 0)}, last batch: "
                  f"{'-' if duration is None else f'{duration:.2f}s'}, freshness: "
                  f"{'-' if fresh is None else f'{fresh:.1f}s'}")
    rows: dict[str, int] = doc.get("rows_by_table") or {}
    if rows:
        table = Table("table", "changes applied")
        for t, n in sorted(rows.items()):
            table.add_row(t, str(n))
        console.print(table)
    lag: dict[str, int] = doc.get("lag") or {}
    if lag:
        table = Table("topic", "records not yet read")
        for t, n in sorted(lag.items()):
            table.add_row(t, str(n))
        console.print(table)
    return live.alive
