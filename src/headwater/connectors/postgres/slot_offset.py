"""``offset.mismatch.strategy``: the stored offset against the replication slot at start.

Debezium 3.x (PostgresConnectorConfig.OffsetSlotMismatchStrategy, PostgresReplicationConnection
.startStreaming / advanceReplicationSlot, PostgresConnection.validateLogPosition):

- ``no_validation`` (default): stream from the stored offset; the slot is not moved (the server
  starts at the slot's confirmed position if that is later).  Debezium's log position check
  still runs (validateLogPosition, which only the two strategies that trust the slot skip): a
  slot whose ``restart_lsn`` is after the offset - re-created, or moved by someone else - no
  longer has the changes since the offset, and the start fails (or re-snapshots with
  ``snapshot.mode=when_needed``) instead of silently skipping them;
- ``trust_offset``: the offset is authoritative: a slot behind it is advanced to it
  (``pg_replication_slot_advance``) before streaming; a slot ahead of it fails as above;
- ``trust_slot``: the slot is authoritative: an offset behind the slot's confirmed position
  moves forward to it (what the slot confirmed is not asked for again); no validation;
- ``trust_greater_lsn``: the later of the two wins: the slot is advanced to an offset ahead
  of it, an offset behind the slot moves to it.

The deprecated ``slot.seek.to.known.offset.on.start`` maps true to trust_offset and false to
no_validation (config.py).
"""

from __future__ import annotations

import logging
from typing import Any

from headwater.connectors.postgres.pgoutput import format_lsn

log = logging.getLogger("headwater.connectors.postgres")

__all__ = ["advance_slot", "offset_behind_slot", "seeks_offset_to_slot",
           "seeks_slot_to_offset", "slot_ahead_of_offset"]


def seeks_slot_to_offset(strategy: str) -> bool:
    return strategy in ("trust_offset", "trust_greater_lsn")


def seeks_offset_to_slot(strategy: str) -> bool:
    return strategy in ("trust_slot", "trust_greater_lsn")


def slot_ahead_of_offset(strategy: str, stored_lsn: int, restart_lsn: int) -> bool:
    """Debezium's validateLogPosition (skipped by trust_slot and trust_greater_lsn): the slot
    needs WAL from after the stored position (``restart_lsn`` past it), so the changes in
    between are gone for it."""
    return strategy in ("no_validation", "trust_offset") and restart_lsn > stored_lsn


def offset_behind_slot(strategy: str, offset: dict[str, Any], confirmed_lsn: int
                       ) -> dict[str, Any]:
    """The offset to stream from: moved to the slot's confirmed position under trust_slot and
    trust_greater_lsn when it is behind (the in-transaction skip fields go with it: every
    transaction the server sends from there commits after them)."""
    stored = int(offset["lsn"])
    if not seeks_offset_to_slot(strategy) or confirmed_lsn <= stored:
        return offset
    log.info("slot step: stored offset %s is behind the slot's confirmed position %s: "
             "streaming from the slot's (offset.mismatch.strategy=%s)",
             format_lsn(stored), format_lsn(confirmed_lsn), strategy)
    moved = {k: v for k, v in offset.items() if k not in ("lsn_commit", "tx_index")}
    moved["lsn"] = confirmed_lsn
    return moved


def advance_slot(cur: Any, slot_name: str, strategy: str, stored_lsn: int,
                 confirmed_lsn: int) -> bool:
    """``pg_replication_slot_advance`` to the stored offset when the slot is behind it (under
    trust_offset and trust_greater_lsn).  True if the slot was advanced."""
    if not seeks_slot_to_offset(strategy) or stored_lsn <= confirmed_lsn:
        return False
    log.info("slot step: SELECT pg_replication_slot_advance(%s, %s): the slot is behind the "
             "stored offset (confirmed %s; offset.mismatch.strategy=%s)", slot_name,
             format_lsn(stored_lsn), format_lsn(confirmed_lsn), strategy)
    cur.execute("SELECT pg_replication_slot_advance(%s, %s::pg_lsn)",
                (slot_name, format_lsn(stored_lsn)))
    return True
