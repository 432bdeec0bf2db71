"""`headwater` with one pause point in the writer, so that a test can kill -9 it at an exact place.

Usage: ``python restart_hook.py <rule.json> run <config> [options]``.

Why not poll the topic and kill: the writer appends, fsyncs, stores the offset and confirms in
a few milliseconds, so a kill timed from outside lands anywhere.  Here the writer stops by
itself at the chosen step and says so, then the test sends SIGKILL.  The rule file is read at
every offset save (a test writes it once it knows the transaction id), and fires once:

    {"when": "before_save" | "after_save" | "after_ack",
     "txId": 123,             # the offset's transaction
     "complete": true,        # the transaction is whole in the batch (lsn past lsn_commit)
     "min_tx_index": 700,     # or: at least this far into it
     "has": "incremental_snapshot_primary_key"}   # a field the offset holds (not null)

- ``before_save``: the batch is in the topic log (fsync'ed), its offset not stored;
- ``after_save``: the offset is stored, the server not told;
- ``after_ack``: the writer has handed the durable LSN to the streaming source, whose reader
  thread (still running) confirms it to the server; the test waits for the slot to show it.

When it fires, ``<rule>.hit`` gets ``{"where", "offset", "previous"}`` (``previous``: the
offset stored before this one) and the writer thread sleeps until killed.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from headwater.connectors.postgres.streaming import PostgresStreamingSource
from headwater.engine.offsets import FileOffsetStore

RULE = Path(sys.argv[1])
_state: dict[str, Any] = {"saved": None, "armed": None, "fired": False}


def _rule() -> dict[str, Any] | None:
    try:
        rule: dict[str, Any] = json.loads(RULE.read_text())
    except FileNotFoundError:
        return None
    return rule


def _matches(rule: dict[str, Any], offset: dict[str, Any]) -> bool:
    if "has" in rule and offset.get(rule["has"]) is None:
        return False
    if "txId" in rule and offset.get("txId") != rule["txId"]:
        return False
    if "complete" in rule:
        commit = offset.get("lsn_commit")
        complete = commit is not None and int(offset["lsn"]) > int(commit)
        if complete != rule["complete"]:
            return False
    return int(offset.get("tx_index") or 0) >= int(rule.get("min_tx_index", 0))


def _pause(where: str, offset: dict[str, Any]) -> None:
    _state["fired"] = True
    hit = RULE.with_name(RULE.name + ".hit")
    tmp = RULE.with_name(RULE.name + ".tmp")
    tmp.write_text(json.dumps({"where": where, "offset": offset, "previous": _state["saved"]}))
    os.replace(tmp, hit)
    while True:
        time.sleep(60)


_save = FileOffsetStore.save
_acknowledge = PostgresStreamingSource.acknowledge


def save(self: FileOffsetStore, offset: dict[str, Any]) -> None:
    rule = None if _state["fired"] else _rule()
    hit = rule is not None and _matches(rule, offset)
    if hit and rule is not None and rule["when"] == "before_save":
        _pause("before_save", offset)
    _save(self, offset)
    if hit and rule is not None and rule["when"] == "after_save":
        _pause("after_save", offset)
    if hit and rule is not None and rule["when"] == "after_ack":
        _state["armed"] = offset
    _state["saved"] = offset


def acknowledge(self: PostgresStreamingSource, token: Any) -> None:
    _acknowledge(self, token)
    armed = _state["armed"]
    if armed is not None and not _state["fired"]:
        _pause("after_ack", armed)


FileOffsetStore.save = save  # type: ignore[method-assign]
PostgresStreamingSource.acknowledge = acknowledge  # type: ignore[method-assign]

if __name__ == "__main__":
    from headwater.cli import main

    sys.argv = ["headwater", *sys.argv[2:]]
    main()
