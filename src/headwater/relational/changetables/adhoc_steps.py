"""The steps of an ad hoc (incremental) snapshot as Debezium's Db2 documentation names them
(seed 004, "ad hoc snapshots" and "incremental snapshots"), logged by name in that order.

Why a list: the seed describes the run as named steps - the connector processes the
execute-snapshot signal, reads the first and last primary key values of each table as its
start and end points, then snapshots the table chunk by chunk, each chunk in a snapshot window
whose buffered READ events are compared with the streamed events and emitted, less the ones a
streamed event superseded, when the window closes.  The change-table connectors (Db2 and SQL
Server, whose documentation describes the same) log those steps under their own logger, so an
operator can follow a snapshot in the seed's words and a test can check the order.
"""

from __future__ import annotations

import logging
from typing import Final

from headwater.relational.snapshot import log_step

AD_HOC_STEPS: Final = (
    "process the execute-snapshot signal",
    "read the first and last primary key values",
    "open the snapshot window",
    "read the chunk into the window's buffer",
    "drop the buffered READ events a streamed event superseded",
    "close the snapshot window and emit the remaining READ events",
)


def step(logger: logging.Logger, number: int, detail: str = "") -> None:
    """Logs step `number` (1-based) of AD_HOC_STEPS, with `detail` in parentheses."""
    log_step(logger, AD_HOC_STEPS, number, detail, "ad hoc snapshot step")
