"""A full disk under capture: the topic log, the offsets file or the Datastream files
destination sits on a small file system (a tmpfs the test mounts; the tests run as root) that
fills while a load writes.

Capture must stop with one clear line naming the path and the cause (no traceback), the slot
must never have confirmed a transaction whose events are not durable in the topic log, and once
space is freed a restart must catch up with nothing lost: replaying the topic gives the table.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from headwater.testing.replay import replay
from headwater.testing.small_disk import fill, grow, small_disk
from tests.pipeline.test_datastream_pipeline import files_state, read_events

from .conftest import Env, wait_for
from .test_crash import Load, _last_snapshot_lsn, _lsn, _start, _topic_txids

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def confirmed_is_durable(env: Env, load: Load, files: Path | None) -> int:
    """Every transaction that ended before the slot's confirmed position is durable in full
    (in the topic log; with the files destination, its inserts' and updates' rows are in
    published files); returns how many were checked."""
    rows = env.sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                   "WHERE slot_name = %s", (env.slot,))
    if not rows or not rows[0][0]:
        return 0
    confirmed = _lsn(rows[0][0])
    if files is not None:
        written = {(e["payload"]["id"], e["payload"]["ver"]) for e in read_events(files)}
        checked = 0
        for txid, _before, after, changes in list(load.committed):
            if after <= confirmed:
                want_rows = {(k, v) for k, op, v in changes if op != "d"}
                assert want_rows <= written, (
                    f"slot confirmed {rows[0][0]} but tx {txid} is not (fully) in the files")
                checked += 1
        return checked
    snapshot_lsn = _last_snapshot_lsn(env)
    if snapshot_lsn is None:
        return 0
    in_topic = _topic_txids(env)
    checked = 0
    for txid, before, after, changes in list(load.committed):
        if after <= confirmed and before >= snapshot_lsn:
            want = {(k, op, v if op != "d" else None) for k, op, v in changes}
            assert want <= in_topic.get(txid, set()), (
                f"slot confirmed {rows[0][0]} but tx {txid} is not (fully) in the topic log")
            checked += 1
    return checked


def captured_state(env: Env, files: Path | None) -> dict[int, int]:
    """key -> ver as replaying what capture wrote gives it."""
    if files is not None:
        return files_state(read_events(files))
    table = replay(env.topics, f"{env.prefix}.public.t")
    return {k[0][1]: row["ver"] for k, row in table.items()}


@pytest.mark.parametrize("on_disk", ["topics", "offsets", "files"])
def test_full_disk_stops_capture_clearly_and_a_restart_loses_nothing(env: Env,
                                                                     on_disk: str) -> None:
    env.sql("CREATE SEQUENCE ver")
    env.sql("CREATE TABLE t (id int PRIMARY KEY, ver bigint NOT NULL, pad text)")
    env.sql("ALTER TABLE t REPLICA IDENTITY FULL")
    env.sql("INSERT INTO t SELECT g, nextval('ver'), repeat('p', 100) "
            "FROM generate_series(1, 2000) g")
    with small_disk(env.tmp / "disk", 16 * 1024) as disk:
        files = disk / "files" if on_disk == "files" else None
        extra: dict[str, object] = {"max.batch.size": 256, "offset.flush.interval.ms": 0}
        if on_disk == "topics":
            env.topics = disk / "topics"
        elif on_disk == "offsets":
            env.offsets = disk / "offsets.json"
        else:
            extra.update({"headwater.event.format": "datastream",
                          "headwater.destination": "files",
                          "headwater.destination.files.dir": str(files),
                          "headwater.destination.files.max.ms": 200})
        config = env.config(extra)
        load = Load(env, seed=3)
        proc = _start(config)
        try:
            wait_for(lambda: env.offsets.exists() and (
                files is not None or _last_snapshot_lsn(env) is not None),
                     timeout=120, interval=0.1, what="the snapshot")
            load.start()
            time.sleep(1.0)
            filler = fill(disk, leave_kb=0 if on_disk == "offsets" else 64)
            wait_for(lambda: proc.poll() is not None, timeout=120, interval=0.2,
                     what="capture to stop on the full disk")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
        assert proc.returncode != 0, err[-2000:]
        assert "Traceback" not in err, err[-3000:]
        assert "No space left on device" in err and str(disk) in err, err[-2000:]
        confirmed_is_durable(env, load, files)

        # Space freed (the filler removed and the disk grown: the changes committed while
        # capture was down need room however long a loaded machine took to get here), the
        # load stopped: a restart catches up with every change.
        load.stop.set()
        load.join(30)
        assert load.error is None, load.error
        filler.unlink()
        grow(disk, 256 * 1024)
        proc = _start(config)
        try:
            source = {r[0]: r[1] for r in env.sql("SELECT id, ver FROM t")}

            def caught_up() -> bool:
                assert proc.poll() is None, proc.stderr.read().decode()[-3000:]  # type: ignore[union-attr]
                return captured_state(env, files) == source
            wait_for(caught_up, timeout=180, interval=1.0, what="the restart to catch up")
            assert confirmed_is_durable(env, load, files) > 0
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(60)
        if files is not None:
            return  # (the files' events carry no txId: the state and durability checks hold)
        in_topic = _topic_txids(env)
        snapshot_lsn = _last_snapshot_lsn(env)
        assert snapshot_lsn is not None
        missing = [txid for txid, before, _after, changes in load.committed
                   if before >= snapshot_lsn
                   and not {(k, op, v if op != "d" else None) for k, op, v in changes}
                   <= in_topic.get(txid, set())]
        assert not missing, f"{len(missing)} transactions missing, e.g. {missing[:5]}"
