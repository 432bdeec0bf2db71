"""The part of the event order the change-table connectors (SQL Server, Db2) share: a sequence
starts with (commit LSN, snapshot-before-stream, change LSN), the LSNs as fixed-width hex text.
Snapshot reads carry the snapshot's LSN as commit LSN and rank there, before the stream events
of later transactions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from headwater.connectors.registry import SNAPSHOT_MARKERS


def lsn_text(digits: int, *, pad: bool) -> Callable[[Any], str]:
    """An LSN as text of `digits` hex digits: colons removed, zero-padded on the left when
    `pad` (SQL Server's are always full width); a missing LSN is zeros."""
    zeros = "0" * digits

    def text(value: Any) -> str:
        if not isinstance(value, str):
            return zeros
        digits_only = value.replace(":", "")
        return digits_only.rjust(digits, "0") if pad else digits_only

    return text


def commit_stream_change(source: dict[str, Any], lsn: Callable[[Any], str]) -> str:
    """(commit LSN, 0 for a snapshot read else 1, change LSN) of a `source` block."""
    is_stream = 0 if source.get("snapshot") in SNAPSHOT_MARKERS else 1
    return f"{lsn(source.get('commit_lsn'))}{is_stream}{lsn(source.get('change_lsn'))}"
