"""The fault harness: random workloads against a real PostgreSQL, one fault per trial, then
proof that nothing went silently wrong.

A trial (`Harness.trial(seed)`):

1. a fresh database with `t (id int PRIMARY KEY, v text, n int)` holding `initial_rows` rows,
   a writer thread committing random transactions (inserts, updates, deletes, key changes)
   for the whole trial, reconnecting when the server goes away;
2. `headwater run` as a subprocess, then ONE fault, chosen with the trial's RNG
   (`FAULTS`): kill -9 of the capture during the initial snapshot or while streaming,
   SIGTERM of the capture, kill -9 of `headwater pipeline`, a server restart (fast or
   immediate shutdown), the walsender terminated (`pg_terminate_backend`), or a damaged topic
   segment (see `_fault_topic_damage`);
3. the writer stops, the capture catches up (the topic replays to the source), stops with
   SIGTERM (exit 0), the pipeline applies the rest (`--once`);
4. checks: `headwater validate --rechecks 0` exits 0; the topic replay equals the source;
   the Delta target equals the source, counting lost (in the source, not the target), phantom
   (in the target, not the source), changed and duplicated (one key twice) rows.

Every trial prints its seed and fault; `Harness.trial(seed, fault)` replays it (the writer's
timing against the processes is not deterministic, the choices are).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from headwater.testing.localpg import LocalPostgres, wait_for
from headwater.testing.replay import replay
from headwater.topics.segment import list_segments

FAULTS = (
    "capture-kill9-snapshot",
    "capture-kill9-stream",
    "capture-sigterm",
    "pipeline-kill9",
    "db-restart-fast",
    "db-restart-immediate",
    "walsender-terminate",
    "topic-damage",
)

# Fault kinds whose failures are a known product defect being fixed elsewhere.
# Fault kinds with a known product defect (marked xfail, not strict, with the reason): none.
KNOWN_DEFECTS: dict[str, str] = {}

TABLE = "t"
_counter = itertools.count()


def _lsn(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


@dataclass
class Counts:
    """Rows of a copy (target or replay) against the source."""

    lost: int = 0
    phantom: int = 0
    changed: int = 0
    duplicated: int = 0

    def add(self, other: Counts) -> None:
        self.lost += other.lost
        self.phantom += other.phantom
        self.changed += other.changed
        self.duplicated += other.duplicated

    @property
    def clean(self) -> bool:
        return not (self.lost or self.phantom or self.changed or self.duplicated)

    def __str__(self) -> str:
        return (f"lost {self.lost}, phantom {self.phantom}, changed {self.changed}, "
                f"duplicated {self.duplicated}")


def compare(source: dict[int, tuple[Any, ...]],
            copy: list[tuple[int, tuple[Any, ...]]]) -> tuple[Counts, list[str]]:
    """Counts and a few examples of what differs between the source and a copy's rows."""
    counts = Counts()
    seen: dict[int, tuple[Any, ...]] = {}
    examples: list[str] = []
    for key, row in copy:
        if key in seen:
            counts.duplicated += 1
            examples.append(f"duplicated id={key}")
        seen[key] = row
    for key, row in seen.items():
        if key not in source:
            counts.phantom += 1
            examples.append(f"phantom id={key} {row}")
        elif source[key] != row:
            counts.changed += 1
            examples.append(f"changed id={key}: source {source[key]}, copy {row}")
    for key in source.keys() - seen.keys():
        counts.lost += 1
        examples.append(f"lost id={key} {source[key]}")
    return counts, examples[:10]


@dataclass
class TrialResult:
    seed: int
    fault: str
    detail: str = ""
    target: Counts = field(default_factory=Counts)
    replayed: Counts = field(default_factory=Counts)
    validate_exit: int | None = None
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    transactions: int = 0

    @property
    def passed(self) -> bool:
        return not self.failures

    def line(self) -> str:
        state = "PASS" if self.passed else "FAIL"
        return (f"[faults] {state} seed={self.seed} fault={self.fault} ({self.detail}) "
                f"{self.transactions} tx, {self.seconds:.0f}s; validate exit "
                f"{self.validate_exit}; target: {self.target}; replay: {self.replayed}"
                + "".join(f"\n    {f}" for f in self.failures))


class Writer(threading.Thread):
    """Random transactions on `t` until stopped; survives server restarts (a transaction cut
    by one is simply not counted: the source itself is the truth the checks compare with)."""

    def __init__(self, pg: LocalPostgres, db: str, seed: int, first_new_id: int) -> None:
        super().__init__(daemon=True)
        self.pg = pg
        self.db = db
        self.rng = random.Random(seed)
        self.next_id = first_new_id
        self.stop = threading.Event()
        self.transactions = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        conn = None
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = self.pg.connect(self.db, autocommit=False)
                self._transaction(conn)
                self.transactions += 1
            except Exception as exc:
                import psycopg2

                if not isinstance(exc, psycopg2.OperationalError | psycopg2.InterfaceError):
                    self.error = exc
                    return
                with contextlib.suppress(Exception):
                    if conn is not None:
                        conn.close()
                conn = None
                time.sleep(0.2)
            time.sleep(self.rng.uniform(0.002, 0.01))
        if conn is not None:
            conn.close()

    def _transaction(self, conn: Any) -> None:
        rng = self.rng
        pick = f"(SELECT id FROM {TABLE} TABLESAMPLE SYSTEM (1) LIMIT 1)"
        with conn.cursor() as cur:
            for _ in range(rng.randint(1, 8)):
                r = rng.random()
                if r < 0.3:
                    self.next_id += 1
                    cur.execute(f"INSERT INTO {TABLE} VALUES (%s, %s, 0)",
                                (self.next_id, f"new{self.next_id}"))
                elif r < 0.75:
                    cur.execute(f"UPDATE {TABLE} SET n = n + 1, v = %s WHERE id = {pick}",
                                (f"u{rng.randrange(10**6)}",))
                elif r < 0.93:
                    cur.execute(f"DELETE FROM {TABLE} WHERE id = {pick}")
                else:
                    self.next_id += 1
                    cur.execute(f"UPDATE {TABLE} SET id = %s WHERE id = {pick}", (self.next_id,))
        conn.commit()


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "headwater.cli", *args]


class Harness:
    """Runs trials against one PostgreSQL server (restarted by some faults) in `base`.

    `pipeline_once(config)` applies the topics to Delta and returns (by default, a
    `headwater pipeline --once` subprocess; the tests pass an in-process Spark session's run,
    which saves the JVM's start per trial)."""

    def __init__(self, pg: LocalPostgres, base: Path, *, initial_rows: int = 20_000,
                 pipeline_once: Callable[[Path], None] | None = None,
                 log: Callable[[str], None] = print) -> None:
        self.pg = pg
        self.base = base
        self.initial_rows = initial_rows
        self.pipeline_once = pipeline_once or self._pipeline_once_cli
        self.log = log
        self.results: list[TrialResult] = []

    # ---- one trial -------------------------------------------------------------------------

    def trial(self, seed: int, fault: str | None = None) -> TrialResult:
        rng = random.Random(seed)
        fault = fault or rng.choice(FAULTS)
        self.log(f"[faults] trial seed={seed} fault={fault} (replay: "
                 f"HEADWATER_FAULT_SEED={seed} HEADWATER_FAULT_KIND={fault})")
        t = _Trial(self, seed, rng, fault)
        started = time.monotonic()
        try:
            t.run()
        except Exception as exc:  # a trial that could not finish is a failed trial
            t.result.failures.append(f"trial aborted: {type(exc).__name__}: {exc}")
        finally:
            t.cleanup()
        t.result.seconds = time.monotonic() - started
        t.result.transactions = t.writer.transactions
        self.results.append(t.result)
        self.log(t.result.line())
        return t.result

    def summary(self) -> str:
        passed = sum(r.passed for r in self.results)
        target, replayed = Counts(), Counts()
        for r in self.results:
            target.add(r.target)
            replayed.add(r.replayed)
        by_fault: dict[str, list[int]] = {}
        for r in self.results:
            by_fault.setdefault(r.fault, [0, 0])[0] += r.passed
            by_fault[r.fault][1] += 1
        kinds = ", ".join(f"{k} {p}/{n}" for k, (p, n) in sorted(by_fault.items()))
        return (f"[faults] trials passed {passed} / {len(self.results)} ({kinds}); "
                f"Delta target totals: {target}; topic replay totals: {replayed}")

    def _pipeline_once_cli(self, config: Path) -> None:
        out = subprocess.run(_cli("pipeline", str(config), "--once", "--log-level", "WARNING"),
                             capture_output=True, text=True, timeout=600, check=False)
        if out.returncode != 0:
            raise AssertionError(f"pipeline --once exited {out.returncode}: {out.stderr[-2000:]}")


class _Trial:
    def __init__(self, h: Harness, seed: int, rng: random.Random, fault: str) -> None:
        self.h = h
        self.pg = h.pg
        self.rng = rng
        self.result = TrialResult(seed, fault)
        n = next(_counter)
        self.db = f"hw_fault_{os.getpid()}_{n}"
        self.slot = f"hw_fault_slot_{n}"
        self.dir = h.base / f"trial-{n}-seed-{seed}"
        self.dir.mkdir(parents=True)
        self.topics = self.dir / "topics"
        self.offsets = self.dir / "offsets.json"
        self.delta = self.dir / "delta"
        self.prefix = "fx"
        self.topic = f"{self.prefix}.public.{TABLE}"
        self.capture: subprocess.Popen[bytes] | None = None
        self.pg.create_database(self.db)
        self.writer = Writer(self.pg, self.db, seed, first_new_id=10 * h.initial_rows)
        self.config = self._write_config()

    def _write_config(self) -> Path:
        props: dict[str, Any] = {
            "name": "fault-trial",
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": "127.0.0.1",
            "database.port": str(self.pg.port),
            "database.user": self.pg.user,
            "database.password": "unused",
            "database.dbname": self.db,
            "topic.prefix": self.prefix,
            "plugin.name": "pgoutput",
            "slot.name": self.slot,
            "publication.name": f"pub_{self.slot}",
            "offset.storage.file.filename": self.offsets,
            "headwater.topics.dir": self.topics,
            "headwater.topics.segment.ms": 300,
            "poll.interval.ms": 100,
            "max.batch.size": 256,
            "retriable.restart.connector.wait.ms": 300,
            "slot.retry.delay.ms": 300,
            "slot.max.retries": 60,
            "headwater.pipeline.delta.path": self.delta,
            "headwater.pipeline.checkpoint.dir": self.dir / "checkpoint",
            "headwater.pipeline.max.records.per.trigger": 5000,
            "headwater.pipeline.trigger.interval.ms": 500,
        }
        path = self.dir / "connector.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    # ---- helpers ---------------------------------------------------------------------------

    def sql(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        conn = self.pg.connect(self.db)
        try:
            with conn.cursor() as cur:
                cur.execute(statement, params)
                return cur.fetchall() if cur.description else []
        finally:
            conn.close()

    def source(self) -> dict[int, tuple[Any, ...]]:
        return {r[0]: (r[1], r[2]) for r in self.sql(f"SELECT id, v, n FROM {TABLE}")}

    def replayed(self) -> list[tuple[int, tuple[Any, ...]]]:
        if not (self.topics / self.topic).is_dir():
            return []
        table = replay(self.topics, self.topic)
        return [(dict(k)["id"], (r["v"], r["n"])) for k, r in table.items()]

    def stored_offset(self) -> dict[str, Any]:
        try:
            doc: dict[str, Any] = orjson.loads(self.offsets.read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            return {}
        return dict(doc.get("offset") or {})

    def snapshot_done(self) -> bool:
        return bool(self.stored_offset().get("snapshot_completed"))

    def start_capture(self) -> None:
        self.capture = subprocess.Popen(
            _cli("run", str(self.config), "--log-level", "WARNING"),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def capture_alive(self) -> None:
        assert self.capture is not None
        if self.capture.poll() is not None:
            assert self.capture.stderr is not None
            raise AssertionError(f"capture exited {self.capture.returncode}: "
                                 f"{self.capture.stderr.read().decode()[-2000:]}")

    def signal_capture(self, sig: signal.Signals, timeout: float = 60) -> int:
        assert self.capture is not None
        self.capture.send_signal(sig)
        code = self.capture.wait(timeout)
        assert self.capture.stderr is not None
        self.stderr = self.capture.stderr.read().decode()
        self.capture.stderr.close()
        self.capture = None
        return code

    def wait_snapshot(self) -> None:
        wait_for(lambda: self.snapshot_done() or self.capture_alive(), timeout=120,
                 interval=0.1, what="the initial snapshot")

    # ---- the trial -------------------------------------------------------------------------

    def run(self) -> None:
        self.sql(f"CREATE TABLE {TABLE} (id int PRIMARY KEY, v text, n int NOT NULL)")
        self.sql(f"INSERT INTO {TABLE} SELECT g, 'init' || g, 0 "
                 f"FROM generate_series(1, {self.h.initial_rows}) g")
        self.writer.start()
        self.start_capture()
        fault = self.result.fault
        method = "db" if fault.startswith("db-restart-") else fault.replace("-", "_")
        getattr(self, f"_fault_{method}")()
        time.sleep(self.rng.uniform(0.5, 2.0))  # writes after the fault
        self.writer.stop.set()
        self.writer.join(60)
        if self.writer.error is not None:
            raise self.writer.error
        self.converge()

    def converge(self) -> None:
        if self.capture is None:
            self.start_capture()
        source = self.source()
        # Caught up: the topic replays to the source, or (when it never will) the stored
        # offset has not moved for 8 s after the snapshot (no heartbeats are configured).
        last: list[Any] = [None, time.monotonic()]

        def caught_up() -> bool:
            self.capture_alive()
            offset = self.stored_offset()
            if offset != last[0]:
                last[:] = [offset, time.monotonic()]
            if sorted(self.replayed()) == sorted(source.items()):
                return True
            return bool(offset.get("snapshot_completed")) and time.monotonic() - last[1] > 8
        with contextlib.suppress(TimeoutError):
            wait_for(caught_up, timeout=120, interval=1.0, what="capture caught up")
        code = self.signal_capture(signal.SIGTERM)
        if code != 0:
            self.result.failures.append(f"capture exited {code} on SIGTERM: "
                                        f"{self.stderr[-1500:]}")
        counts, examples = compare(source, self.replayed())
        self.result.replayed = counts
        if not counts.clean:
            self.result.failures.append(f"topic replay != source ({counts}): {examples}")
        self.h.pipeline_once(self.config)
        self.result.validate_exit, text = self.validate()
        if self.result.validate_exit != 0:
            self.result.failures.append(f"validate exited {self.result.validate_exit}: "
                                        f"{text[-1500:]}")
        counts, examples = compare(source, self.target())
        self.result.target = counts
        if not counts.clean:
            self.result.failures.append(f"Delta target != source ({counts}): {examples}")

    def validate(self) -> tuple[int, str]:
        out = subprocess.run(
            _cli("validate", str(self.config), "--rechecks", "0", "--chunk-rows", "5000"),
            capture_output=True, text=True, timeout=300, check=False)
        return out.returncode, out.stdout + out.stderr

    def target(self) -> list[tuple[int, tuple[Any, ...]]]:
        from headwater.pipeline.delta_target import read_table

        path = self.delta / "public" / TABLE
        if not path.exists():
            return []
        return [(r["id"], (r["v"], r["n"])) for r in read_table(path).to_pylist()]

    # ---- faults ----------------------------------------------------------------------------

    def _topic_bytes(self) -> int:
        with contextlib.suppress(FileNotFoundError):
            return sum(p.stat().st_size for p in (self.topics / self.topic).iterdir())
        return 0

    def _fault_capture_kill9_snapshot(self) -> None:
        # Kill once the topic holds a random fraction of the snapshot's records (estimated
        # from the size of the first record), polling every 10 ms (~200 rows at 20k rows/s).
        def first_line() -> bytes | None:
            self.capture_alive()
            for seg in list_segments(self.topics / self.topic) if (
                    self.topics / self.topic).is_dir() else []:
                with seg.path.open("rb") as f:
                    line = f.readline()
                if line.endswith(b"\n"):
                    return line
            return None

        line = wait_for(first_line, timeout=60, interval=0.01, what="the first snapshot record")
        fraction = self.rng.uniform(0.05, 0.9)
        threshold = fraction * self.h.initial_rows * len(line)
        wait_for(lambda: self.snapshot_done() or self._topic_bytes() >= threshold,
                 timeout=120, interval=0.01, what="the snapshot's progress")
        done = self.snapshot_done()
        self.signal_capture(signal.SIGKILL)
        rows = self._topic_records()
        self.result.detail = (f"killed after the snapshot ({rows} records)" if done else
                              f"killed during the snapshot, {rows} records in the topic")

    def _fault_capture_kill9_stream(self) -> None:
        self.wait_snapshot()
        kills = self.rng.randint(1, 3)
        for _ in range(kills):
            time.sleep(self.rng.uniform(0.2, 2.5))
            self.capture_alive()
            self.signal_capture(signal.SIGKILL)
            self.start_capture()
        self.result.detail = f"{kills} kill(s) while streaming"

    def _fault_capture_sigterm(self) -> None:
        during = self.rng.random() < 0.3
        if during:
            time.sleep(self.rng.uniform(1.0, 2.0))
        else:
            self.wait_snapshot()
            time.sleep(self.rng.uniform(0.2, 2.5))
        done = self.snapshot_done()
        code = self.signal_capture(signal.SIGTERM)
        if code != 0:
            self.result.failures.append(f"capture exited {code} on SIGTERM: "
                                        f"{self.stderr[-1500:]}")
        self.result.detail = "SIGTERM " + ("after the snapshot" if done else "during it")
        self.start_capture()

    def _fault_pipeline_kill9(self) -> None:
        self.wait_snapshot()
        proc = subprocess.Popen(_cli("pipeline", str(self.config), "--log-level", "WARNING"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # Spark starts in ~5-15 s here: kill once the first batch has committed to the target,
        # 0-4 s later (inside a batch or between two).
        started = time.monotonic()
        with contextlib.suppress(TimeoutError):
            wait_for(lambda: proc.poll() is not None or (
                self.delta / "public" / TABLE / "_delta_log").is_dir(),
                timeout=60, interval=0.05, what="the pipeline's first batch")
        time.sleep(self.rng.uniform(0.0, 4.0))
        delay = time.monotonic() - started
        if proc.poll() is not None:
            assert proc.stderr is not None
            raise AssertionError(f"pipeline exited {proc.returncode} before the kill: "
                                 f"{proc.stderr.read().decode()[-2000:]}")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()
        applied = len(self.target())
        self.result.detail = f"pipeline killed after {delay:.1f}s, {applied} rows in the target"

    def _fault_db(self) -> None:
        mode = self.result.fault.removeprefix("db-restart-")
        if self.rng.random() < 0.25:
            time.sleep(self.rng.uniform(1.0, 2.0))  # maybe during the snapshot
        else:
            self.wait_snapshot()
            time.sleep(self.rng.uniform(0.2, 2.0))
        done = self.snapshot_done()
        self.pg.stop(mode)
        time.sleep(self.rng.uniform(0.2, 2.0))
        self.pg.start()
        self.result.detail = f"{mode} shutdown " + ("after the snapshot" if done else
                                                      "during it")
        # The capture reconnects by itself (a retriable failure), or, if the snapshot was cut,
        # fails and is restarted as an operator would.
        time.sleep(1.0)
        assert self.capture is not None
        if self.capture.poll() is not None:
            code = self.signal_capture(signal.SIGTERM)
            self.result.detail += f"; capture exited {code}, restarted"
            self.start_capture()

    def _fault_walsender_terminate(self) -> None:
        self.wait_snapshot()
        cuts = 0
        for _ in range(self.rng.randint(1, 3)):
            time.sleep(self.rng.uniform(0.3, 2.0))
            rows = self.sql("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                            "WHERE slot_name = %s AND active_pid IS NOT NULL", (self.slot,))
            cuts += len(rows)
        self.result.detail = f"{cuts} walsender(s) terminated"
        self.capture_alive()

    def _topic_records(self) -> int:
        if not (self.topics / self.topic).is_dir():
            return 0
        from headwater.topics.check import check_topic

        return sum(s.next_offset - s.base for s in check_topic(self.topics, self.topic).segments
                   if s.damage is None)

    def _fault_topic_damage(self) -> None:
        """A line removed from a sealed segment of the table's topic.  Checks: `topics verify`
        names it (exit 1); `headwater pipeline --once` refuses it (exit 1, the damage in its
        message) instead of skipping it; `topics verify --repair` on a copy of the log cuts
        the topic back and says what it removed, and the slot had already confirmed past the
        removed records (so they cannot be streamed again: repair + re-capture does not
        converge without a new snapshot into a new target).  Then the original bytes are put
        back and the trial must converge like any other."""
        self.wait_snapshot()
        time.sleep(self.rng.uniform(0.5, 2.0))
        code = self.signal_capture(signal.SIGTERM)
        if code != 0:
            self.result.failures.append(f"capture exited {code} on SIGTERM")
        sealed = [s.path for s in list_segments(self.topics / self.topic)
                  if not s.path.name.startswith(".")]
        sealed = [p for p in sealed if p.read_bytes().count(b"\n") >= 3]
        assert sealed, "no sealed segment to damage"
        seg = self.rng.choice(sealed)
        backup = seg.read_bytes()
        lines = backup.splitlines(keepends=True)
        cut = self.rng.randrange(1, len(lines) - 1)
        removed = orjson.loads(lines[cut])
        seg.write_bytes(b"".join(lines[:cut] + lines[cut + 1:]))
        self.result.detail = f"record {removed['offset']} removed from {seg.name}"
        fails = self.result.failures

        verify = subprocess.run(_cli("topics", "verify", "--dir", str(self.topics)),
                                capture_output=True, text=True, timeout=120, check=False)
        if verify.returncode != 1 or f"{self.topic}: DAMAGED: segment {seg}" not in verify.stdout:
            fails.append(f"topics verify did not report the damage: exit {verify.returncode}, "
                         f"{verify.stdout[-800:]} {verify.stderr[-800:]}")
        pipe = subprocess.run(_cli("pipeline", str(self.config), "--once", "--log-level",
                                   "WARNING"),
                              capture_output=True, text=True, timeout=600, check=False)
        expected = f"topic log damaged: topic {self.topic}, segment {seg}, offset "
        if pipe.returncode == 0 or expected not in pipe.stderr:
            fails.append(f"pipeline did not refuse the damaged log: exit {pipe.returncode}, "
                         f"{pipe.stderr[-1500:]}")

        copy = self.dir / "topics-repaired"
        shutil.copytree(self.topics, copy)
        repair = subprocess.run(_cli("topics", "verify", "--dir", str(copy), "--repair"),
                                capture_output=True, text=True, timeout=120, check=False)
        again = subprocess.run(_cli("topics", "verify", "--dir", str(copy)),
                               capture_output=True, text=True, timeout=120, check=False)
        if repair.returncode != 0 or "repaired:" not in repair.stdout or again.returncode != 0:
            fails.append(f"repair failed: exit {repair.returncode}/{again.returncode}, "
                         f"{repair.stdout[-800:]} {repair.stderr[-800:]}")
        # The removed records were acknowledged: the slot confirmed past them, so restarting
        # the capture on the repaired log cannot bring them back.
        confirmed = self.sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                             "WHERE slot_name = %s", (self.slot,))[0][0]
        lsn = (removed["value"] or {}).get("payload", {}).get("source", {}).get("lsn")
        if lsn is not None and _lsn(confirmed) < int(lsn):
            fails.append(f"slot confirmed {confirmed}, not past the removed record (lsn {lsn})")
        seg.write_bytes(backup)  # put the original bytes back; the trial goes on
        self.start_capture()

    def cleanup(self) -> None:
        self.writer.stop.set()
        if self.writer.is_alive():
            self.writer.join(30)
        if self.capture is not None:
            with contextlib.suppress(Exception):
                self.signal_capture(signal.SIGKILL)
        with contextlib.suppress(Exception):
            wait_for(lambda: not self.sql(
                "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s AND active",
                (self.slot,)), timeout=30, what="the slot released")
            self.sql("SELECT pg_drop_replication_slot(%s)", (self.slot,))
        with contextlib.suppress(Exception):
            conn = self.pg.connect()
            with conn.cursor() as cur:
                cur.execute(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')
            conn.close()
        if not os.environ.get("HEADWATER_FAULT_KEEP"):
            shutil.rmtree(self.dir / "delta", ignore_errors=True)
