"""The fault harness: random workloads against a real PostgreSQL, MariaDB or MongoDB, one
fault per trial, then proof that nothing went silently wrong.

One harness for every source: what differs per source (server, table, workload, properties,
the replication connection, what was acknowledged) is behind `sources.Source`/`SourceTrial`.

A trial (`Harness.trial(seed)`):

1. a fresh database with `t (id PRIMARY KEY, v, n)` (MongoDB: collection `c` of
   `{_id, v, n}`) holding the source's `initial_rows` rows, a writer thread committing random
   transactions (inserts, updates, deletes, key changes where the source has them) for the
   whole trial, reconnecting when the server goes away;
2. `headwater run` as a subprocess, then ONE fault, chosen with the trial's RNG from the
   source's kinds (`Source.faults`): kill -9 of the capture during the initial snapshot or
   while streaming, SIGTERM of the capture, kill -9 of `headwater pipeline`, a server restart
   (clean or abrupt shutdown), the replication connection cut (walsender terminated, binlog
   dump thread killed, change stream cursor killed), or a damaged topic segment (see
   `_fault_topic_damage`);
3. the writer stops, the capture catches up (the topic replays to the source), stops with
   SIGTERM (exit 0), the pipeline applies the rest (`--once`);
4. checks: `headwater validate --rechecks 0` exits 0 (where validate reads the source: not
   MongoDB); the topic replay equals the source; the target equals the source, counting
   lost (in the source, not the target), phantom (in the target, not the source), changed and
   duplicated (one key twice) rows.

The target is a Delta table, or with `target="iceberg"` an Iceberg table (SCD1, a warehouse
and catalog of the trial's own): then the harness reads it, and runs `headwater validate`, in
the tests' Spark session (`spark`), the one the catch-up pipeline runs in.

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
from typer.testing import CliRunner

from headwater.testing.localpg import failing_fast, wait_for
from headwater.testing.replay import replay
from headwater.testing.stored_offsets import snapshot_completed, stored_offset
from headwater.topics.segment import list_segments

from .sources import Ids, Source, SourceTrial

# Fault kinds with a known product defect, "source/kind" -> reason (marked xfail, not strict;
# the long form passes with only these failing, and says so).
KNOWN_DEFECTS: dict[str, str] = {}

# The sources whose topics the pipeline reads from Kafka (`headwater.topics.store=kafka`; not
# MongoDB's documents: docs/pipeline.md), so the harness runs them on the Kafka store too.
KAFKA_SOURCES = ("postgres", "mariadb")

# The replication connection cut, per source (one kind of fault, three mechanisms).
CONNECTION_CUTS = ("walsender-terminate", "binlog-kill", "change-stream-kill")

_counter = itertools.count()


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
    source: str
    fault: str
    detail: str = ""
    target: Counts = field(default_factory=Counts)
    replayed: Counts = field(default_factory=Counts)
    validate_exit: int | None = None
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    transactions: int = 0
    ddl: int = 0  # DDL statements in the workload (MariaDB)

    @property
    def passed(self) -> bool:
        return not self.failures

    def line(self) -> str:
        state = "PASS" if self.passed else "FAIL"
        return (f"[faults] {state} seed={self.seed} source={self.source} fault={self.fault} "
                f"({self.detail}) "
                f"{self.transactions} tx" + (f" ({self.ddl} DDL)" if self.ddl else "") +
                f", {self.seconds:.0f}s; validate exit "
                f"{self.validate_exit}; target: {self.target}; replay: {self.replayed}"
                + "".join(f"\n    {f}" for f in self.failures))


class Writer(threading.Thread):
    """Random transactions (the source's `transaction`) until stopped; survives server
    restarts (a transaction cut by one is simply not counted: the source itself is the truth
    the checks compare with)."""

    def __init__(self, st: SourceTrial, seed: int, ids: Ids) -> None:
        super().__init__(daemon=True)
        self.st = st
        self.rng = random.Random(seed)
        self.ids = ids
        self.stop = threading.Event()
        self.transactions = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        conn = None
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = self.st.connect()
                self.st.transaction(conn, self.rng, self.ids)
                self.transactions += 1
            except Exception as exc:
                if not self.st.transient(exc):
                    self.error = exc
                    return
                if conn is not None:
                    self.st.close(conn)
                conn = None
                time.sleep(0.2)
            time.sleep(self.rng.uniform(0.002, 0.01))
        if conn is not None:
            self.st.close(conn)


def _consumer(bootstrap: str) -> Any:
    from confluent_kafka import Consumer

    # (quiet: the broker-kill9 fault refuses its connections for a while)
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "headwater-faults",
                     "enable.auto.commit": False, "enable.partition.eof": True,
                     "auto.offset.reset": "earliest", "log_level": 0})


def kafka_records(bootstrap: str, topic: str) -> int:
    """How many records a Kafka topic holds (the sum of its partitions' high watermarks; 0
    while it does not exist)."""
    from headwater.kafka.consume import end_offsets, partition_counts

    consumer = _consumer(bootstrap)
    try:
        count = partition_counts(consumer, [topic], timeout=10).get(topic, 0)
        return sum(end_offsets(consumer, [(topic, p) for p in range(count)]).values())
    finally:
        consumer.close()


def kafka_replay(bootstrap: str, topic: str) -> dict[Any, dict[str, Any]]:
    """`headwater.testing.replay.replay` of a Kafka topic: every record, partition by
    partition in offset order (a key's records are all in one partition)."""
    from headwater.kafka.consume import partition_counts, read_until_end

    consumer = _consumer(bootstrap)
    table: dict[Any, dict[str, Any]] = {}
    try:
        count = partition_counts(consumer, [topic], timeout=10).get(topic, 0)
        msgs = read_until_end(consumer, {(topic, p): 0 for p in range(count)})
        for msg in sorted(msgs, key=lambda m: (m.partition(), m.offset())):
            if msg.value() is None:
                continue  # a tombstone
            key = orjson.loads(msg.key())
            value = orjson.loads(msg.value())
            key = key["payload"] if isinstance(key, dict) and "payload" in key else key
            value = value.get("payload", value)
            frozen = tuple(sorted(key.items())) if isinstance(key, dict) else key
            if value["op"] in ("c", "r", "u"):
                table[frozen] = value["after"]
            elif value["op"] == "d":
                table.pop(frozen, None)
            elif value["op"] == "t":
                table.clear()
    finally:
        consumer.close()
    return table


class _Drain(threading.Thread):
    """Reads a process's stderr as it comes, keeping the last `keep` bytes.  A pipe nobody
    reads fills (64 KiB) and then blocks the process at its next write to stderr: while the
    broker was down, librdkafka's connection errors filled it and froze the capture, its
    logging lock held by a blocked write, so that even SIGTERM's handler (which logs) waited
    (py-spy: both threads in logging; long form seeds 291145 and 291152)."""

    def __init__(self, proc: subprocess.Popen[bytes], keep: int = 64 * 1024) -> None:
        super().__init__(daemon=True)
        assert proc.stderr is not None
        self.stream = proc.stderr
        self.keep = keep
        self.tail = bytearray()
        self.lock = threading.Lock()
        self.start()

    def run(self) -> None:
        with self.stream:
            for line in self.stream:
                with self.lock:
                    self.tail += line
                    del self.tail[:-self.keep]

    def text(self) -> str:
        """What was read so far (once the process exited: all of it, up to `keep`)."""
        self.join(10)
        with self.lock:
            return self.tail.decode(errors="replace")


def _py_spy_dump(pid: int) -> str:
    """The Python stacks of a running process (`py-spy dump`), or why there are none."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    try:
        out = subprocess.run([spy, "dump", "--pid", str(pid)], capture_output=True, text=True,
                             timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(no py-spy dump: {exc})"
    return out.stdout + out.stderr


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "headwater.cli", *args]


class Harness:
    """Runs trials against one source's server (restarted by some faults) in `base`.

    `pipeline_once(config)` applies the topics to the target and returns (by default, a
    `headwater pipeline --once` subprocess; the tests pass an in-process Spark session's run,
    which saves the JVM's start per trial).  `target`: `delta`, or `iceberg` (needs `spark`,
    the session that reads the tables and runs validate)."""

    def __init__(self, source: Source, base: Path, *, initial_rows: int | None = None,
                 pipeline_once: Callable[[Path], None] | None = None,
                 log: Callable[[str], None] = print, target: str = "delta",
                 spark: Any = None, store: str = "local", kafka: Any = None) -> None:
        if target not in ("delta", "iceberg"):
            raise ValueError(f"target {target!r}: the harness writes delta or iceberg")
        if store not in ("local", "kafka"):
            raise ValueError(f"store {store!r}: the harness runs on the local topic log or "
                             "kafka")
        if store == "kafka" and (kafka is None or source.name not in KAFKA_SOURCES):
            raise ValueError(f"the Kafka store needs a running KafkaCluster and one of the "
                             f"sources the pipeline reads from Kafka ({', '.join(KAFKA_SOURCES)}"
                             f"), not {source.name}")
        self.store = store
        self.kafka = kafka
        if target == "iceberg" and (spark is None or not source.validates):
            raise ValueError("an Iceberg target needs the tests' Spark session, and a source "
                             "validate reads (not MongoDB: validated in Delta only)")
        self.target = target
        self.spark = spark
        self.source = source
        self.base = base
        self.initial_rows = initial_rows or source.initial_rows
        self.pipeline_once = pipeline_once or self._pipeline_once_cli
        self.log = log
        self.results: list[TrialResult] = []

    @property
    def name(self) -> str:
        """The source, and `@kafka` when the topics are in Kafka (`headwater.topics.store`)."""
        return self.source.name + ("@kafka" if self.store == "kafka" else "")

    @property
    def faults(self) -> tuple[str, ...]:
        """The source's kinds; on the Kafka store without `topic-damage` (a local log's
        segment) and with `broker-kill9`."""
        if self.store == "local":
            return self.source.faults
        return (*(f for f in self.source.faults if f != "topic-damage"), "broker-kill9")

    # ---- one trial -------------------------------------------------------------------------

    def trial(self, seed: int, fault: str | None = None) -> TrialResult:
        rng = random.Random(seed)
        fault = fault or rng.choice(self.faults)
        if fault not in self.faults:
            raise ValueError(f"fault kind {fault!r} is not one of {self.name}'s: "
                             f"{', '.join(self.faults)}")
        self.log(f"[faults] trial seed={seed} source={self.name} fault={fault} "
                 f"(replay: HEADWATER_FAULT_SEED={seed} HEADWATER_FAULT_SOURCES="
                 f"{self.name} HEADWATER_FAULT_KIND={fault})")
        t = _Trial(self, seed, rng, fault)
        started = time.monotonic()
        try:
            t.run()
        except Exception as exc:  # a trial that could not finish is a failed trial
            t.result.failures.append(f"trial aborted: {type(exc).__name__}: {exc}")
        finally:
            t.cleanup()
        if any(f.startswith("trial aborted") for f in t.result.failures) and t.stderr.strip():
            t.result.failures.append(f"the capture's last stderr: {t.stderr[-1500:]}")
        t.result.seconds = time.monotonic() - started
        t.result.transactions = t.writer.transactions
        t.result.ddl = getattr(t.st, "ddl", 0)
        self.results.append(t.result)
        self.log(t.result.line())
        return t.result

    def summary(self) -> str:
        return summary(self.results)

    def _pipeline_once_cli(self, config: Path) -> None:
        out = subprocess.run(_cli("pipeline", str(config), "--once", "--log-level", "WARNING"),
                             capture_output=True, text=True, timeout=600, check=False)
        if out.returncode != 0:
            raise AssertionError(f"pipeline --once exited {out.returncode}: {out.stderr[-2000:]}")


def summary(results: list[TrialResult]) -> str:
    """Passed / run per source and kind, the counts per fault kind (over its sources) in the
    targets and the replays, and the totals."""
    passed = sum(r.passed for r in results)
    target, replayed = Counts(), Counts()
    for r in results:
        target.add(r.target)
        replayed.add(r.replayed)
    by_fault: dict[str, list[int]] = {}
    per_kind: dict[str, tuple[list[int], Counts, Counts]] = {}
    for r in results:
        by_fault.setdefault(f"{r.source}/{r.fault}", [0, 0])[0] += r.passed
        by_fault[f"{r.source}/{r.fault}"][1] += 1
        tally, t, p = per_kind.setdefault(r.fault, ([0, 0], Counts(), Counts()))
        tally[0] += r.passed
        tally[1] += 1
        t.add(r.target)
        p.add(r.replayed)
    kinds = ", ".join(f"{k} {p}/{n}" for k, (p, n) in sorted(by_fault.items()))
    validated = sum(r.validate_exit is not None for r in results)
    lines = "".join(f"\n[faults]   {kind}: passed {tally[0]}/{tally[1]}; target: {t}; "
                    f"replay: {p}" for kind, (tally, t, p) in sorted(per_kind.items()))
    return (f"[faults] trials passed {passed} / {len(results)} ({kinds}); "
            f"target totals: {target}; topic replay totals: {replayed}; "
            f"validate ran after {validated} trials; per fault kind:{lines}")


class _Trial:
    def __init__(self, h: Harness, seed: int, rng: random.Random, fault: str) -> None:
        self.h = h
        self.rng = rng
        self.result = TrialResult(seed, h.name, fault)
        n = next(_counter)
        self.dir = h.base / f"trial-{n}-seed-{seed}"
        self.dir.mkdir(parents=True)
        self.topics = self.dir / "topics"
        self.offsets = self.dir / "offsets.json"
        self.delta = self.dir / "delta"
        self.warehouse = self.dir / "iceberg"
        # (a catalog of its own: a session keeps a catalog's warehouse once loaded)
        self.catalog = f"fx_{os.getpid()}_{n}"
        # (on Kafka, topics of their own: the broker is the module's, shared by its trials)
        self.prefix = "fx" if h.store == "local" else f"fx{os.getpid()}n{n}"
        self.capture: subprocess.Popen[bytes] | None = None
        self.stderr = ""  # the last capture's, read when it stopped
        self.pipeline: subprocess.Popen[bytes] | None = None
        self.st = h.source.trial(n)
        self.writer = Writer(self.st, seed, Ids(h.initial_rows, 10 * h.initial_rows))
        self.config = self._write_config()
        self.topic = self.st.topic

    def _write_config(self) -> Path:
        props: dict[str, Any] = {
            "name": "fault-trial",
            **self.st.properties(self.prefix, self.dir),
            "topic.prefix": self.prefix,
            "offset.storage.file.filename": self.offsets,
            "headwater.topics.dir": self.topics,
            "headwater.topics.segment.ms": 300,
            "poll.interval.ms": 100,
            "max.batch.size": 256,
            "retriable.restart.connector.wait.ms": 300,
            "headwater.pipeline.delta.path": self.delta,
            "headwater.pipeline.checkpoint.dir": self.dir / "checkpoint",
            "headwater.pipeline.max.records.per.trigger": 5000,
            "headwater.pipeline.trigger.interval.ms": 500,
        }
        if self.h.store == "kafka":
            props.update({"headwater.topics.store": "kafka",
                          "bootstrap.servers": self.h.kafka.bootstrap,
                          "topic.creation.default.partitions": 2,
                          "topic.creation.default.replication.factor":
                              self.h.kafka.replication_factor})
        if self.h.target == "iceberg":
            props.update({"headwater.pipeline.target": "iceberg",
                          "headwater.pipeline.iceberg.warehouse": self.warehouse,
                          "headwater.pipeline.iceberg.catalog": self.catalog})
        path = self.dir / "connector.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    # ---- helpers ---------------------------------------------------------------------------

    def replayed(self) -> list[tuple[int, tuple[Any, ...]]]:
        if self.h.store == "kafka":
            table = kafka_replay(self.h.kafka.bootstrap, self.topic)
        elif not (self.topics / self.topic).is_dir():
            return []
        else:
            table = replay(self.topics, self.topic)
        return [self.st.replay_row(k, r) for k, r in table.items()]

    def source(self) -> dict[int, tuple[Any, ...]]:
        return self.st.source()

    def stored_offset(self) -> dict[str, Any]:
        return stored_offset(self.offsets)

    def snapshot_done(self) -> bool:
        return snapshot_completed(self.offsets)

    def start_capture(self) -> None:
        self.capture = subprocess.Popen(
            _cli("run", str(self.config), "--log-level", "WARNING"),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.capture_err = _Drain(self.capture)

    def capture_alive(self) -> None:
        assert self.capture is not None
        if self.capture.poll() is not None:
            raise AssertionError(f"capture exited {self.capture.returncode}: "
                                 f"{self.capture_err.text()[-2000:]}")

    def capture_until(self, done: Callable[[], object]) -> Callable[[], object]:
        """A wait predicate: done()'s result, failing at once when the capture has exited."""
        return failing_fast(done, self.capture_alive)

    def signal_capture(self, sig: signal.Signals, timeout: float = 60) -> int:
        assert self.capture is not None
        self.capture.send_signal(sig)
        try:
            code = self.capture.wait(timeout)
        except subprocess.TimeoutExpired:
            # where it is stuck (py-spy, when installed), then killed: the trial fails
            stacks = _py_spy_dump(self.capture.pid)
            self.capture.kill()
            self.capture.wait()
            raise AssertionError(f"the capture did not exit within {timeout:.0f}s of "
                                 f"{sig.name}; its threads: {stacks}") from None
        self.stderr = self.capture_err.text()
        self.capture = None
        return code

    def wait_snapshot(self) -> None:
        wait_for(self.capture_until(self.snapshot_done), timeout=300,
                 interval=0.1, what="the initial snapshot")

    # ---- the trial -------------------------------------------------------------------------

    def run(self) -> None:
        self.st.setup(self.h.initial_rows)
        self.writer.start()
        self.start_capture()
        fault = self.result.fault
        method = ("db" if fault.startswith("db-restart-") else
                  "connection_cut" if fault in CONNECTION_CUTS else fault.replace("-", "_"))
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
        # offset has not moved for 30 s after the snapshot (no heartbeats are configured; a
        # restarted capture can take 10 s and more to start on a loaded machine).
        last: list[Any] = [None, time.monotonic()]

        def caught_up() -> bool:
            self.capture_alive()
            offset = self.stored_offset()
            if offset != last[0]:
                last[:] = [offset, time.monotonic()]
            if sorted(self.replayed()) == sorted(source.items()):
                return True
            return self.snapshot_done() and time.monotonic() - last[1] > 30
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
        if self.h.source.validates:
            self.result.validate_exit, text = self.validate()
            if self.result.validate_exit != 0:
                self.result.failures.append(f"validate exited {self.result.validate_exit}: "
                                            f"{text[-1500:]}")
        counts, examples = compare(source, self.target())
        self.result.target = counts
        if not counts.clean:
            self.result.failures.append(f"{self.h.target} target != source ({counts}): "
                                        f"{examples}")

    def validate(self) -> tuple[int, str]:
        if self.h.target == "iceberg":  # in the tests' Spark session (validate uses it)
            from headwater.cli import app

            result = CliRunner().invoke(app, ["validate", str(self.config), "--rechecks", "0",
                                              "--chunk-rows", "5000"])
            return result.exit_code, result.output
        out = subprocess.run(
            _cli("validate", str(self.config), "--rechecks", "0", "--chunk-rows", "5000"),
            capture_output=True, text=True, timeout=300, check=False)
        return out.returncode, out.stdout + out.stderr

    def target(self) -> list[tuple[int, tuple[Any, ...]]]:
        from headwater.pipeline.delta_target import read_table

        path = self.target_path()
        if not path.exists():
            return []
        if self.h.target == "iceberg":
            from headwater.pipeline.iceberg_target import register_catalog

            register_catalog(self.h.spark, self.catalog, self.warehouse.resolve())
            name = ".".join((self.catalog, *self.st.target_parts))
            return [self.st.target_row(r) for r in self.h.spark.table(name).toArrow()
                    .to_pylist()]
        return [self.st.target_row(r) for r in read_table(path).to_pylist()]

    def target_path(self) -> Path:
        schema, table = self.st.target_parts
        if self.h.target == "iceberg":  # the Hadoop catalog's table directory
            return self.warehouse / schema / table
        return self.delta / schema / table

    def first_commit(self) -> bool:
        """Whether the pipeline has committed rows to the target table (Iceberg: a snapshot's
        manifest list; the table's creation alone writes metadata without one)."""
        if self.h.target == "iceberg":
            metadata = self.target_path() / "metadata"
            return metadata.is_dir() and any(metadata.glob("snap-*.avro"))
        return (self.target_path() / "_delta_log").is_dir()

    # ---- faults ----------------------------------------------------------------------------

    def _topic_bytes(self) -> int:
        with contextlib.suppress(FileNotFoundError):
            return sum(p.stat().st_size for p in (self.topics / self.topic).iterdir())
        return 0

    def _topic_started(self) -> bool:
        if self.h.store == "kafka":
            return kafka_records(self.h.kafka.bootstrap, self.topic) > 0
        return self._topic_bytes() > 0

    def _fault_capture_kill9_snapshot(self) -> None:
        """Kills capture once the topic holds a random fraction of the snapshot's records."""
        fraction = self.rng.uniform(0.05, 0.9)
        progressed: Callable[[], bool]
        interval = 0.02 if self.h.store == "kafka" else 0.01  # (a Kafka poll asks the broker)
        if self.h.store == "kafka":  # (the record count itself: the topic's watermarks)
            def progressed() -> bool:
                return kafka_records(self.h.kafka.bootstrap,
                                     self.topic) >= fraction * self.h.initial_rows
        else:
            # (estimated from the size of the first record, polling every 10 ms: ~200 rows
            # at 20k rows/s)
            def first_line() -> bytes | None:
                self.capture_alive()
                for seg in list_segments(self.topics / self.topic) if (
                        self.topics / self.topic).is_dir() else []:
                    with seg.path.open("rb") as f:
                        line = f.readline()
                    if line.endswith(b"\n"):
                        return line
                return None

            line = wait_for(first_line, timeout=60, interval=0.01,
                            what="the first snapshot record")
            threshold = fraction * self.h.initial_rows * len(line)

            def progressed() -> bool:
                return self._topic_bytes() >= threshold

        def snapshot_or_progress() -> bool:
            if self.snapshot_done():
                return True
            self.capture_alive()
            return progressed()
        wait_for(snapshot_or_progress,
                 timeout=120, interval=interval, what="the snapshot's progress")
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
        if during:  # once the capture runs (its first record), before its snapshot ends
            wait_for(self.capture_until(self._topic_started), timeout=120,
                     interval=0.05, what="the first snapshot record")
            time.sleep(self.rng.uniform(0.0, 1.0))
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
        # Spark starts in ~5-15 s here: kill once the first batch has committed to the target,
        # 0-4 s later (inside a batch or between two).  A pipeline whose Python worker did not
        # connect back within Spark's fixed 10 s (a loaded machine) is started again.
        for attempt in range(1, 4):
            proc = subprocess.Popen(_cli("pipeline", str(self.config), "--log-level",
                                         "WARNING"),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            self.pipeline = proc  # killed by cleanup if the trial stops before the fault
            started = time.monotonic()
            with contextlib.suppress(TimeoutError):
                wait_for(lambda p=proc: p.poll() is not None or self.first_commit(),
                    timeout=60, interval=0.05, what="the pipeline's first batch")
            time.sleep(self.rng.uniform(0.0, 4.0))
            delay = time.monotonic() - started
            if proc.poll() is None:
                break
            assert proc.stderr is not None
            err = proc.stderr.read().decode()
            proc.stderr.close()
            if "Python worker failed to connect back" not in err or attempt == 3:
                raise AssertionError(f"pipeline exited {proc.returncode} before the kill: "
                                     f"{err[-2000:]}")
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
        self.h.source.stop(mode)
        time.sleep(self.rng.uniform(0.2, 2.0))
        self.h.source.restart_after_stop()
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

    def _fault_connection_cut(self) -> None:
        """The capture's replication connection cut from the server's side, 1-3 times
        (walsender-terminate, binlog-kill, change-stream-kill)."""
        self.wait_snapshot()
        cuts = 0
        for _ in range(self.rng.randint(1, 3)):
            time.sleep(self.rng.uniform(0.3, 2.0))
            cuts += self.st.cut_connection()
        self.result.detail = f"{cuts} connection(s) cut ({self.result.fault})"
        self.capture_alive()

    def _fault_broker_kill9(self) -> None:
        """kill -9 of the Kafka broker (the topic store), during the snapshot in 25 % of
        trials, restarted on its data 0.2-2 s later: the capture must lose nothing it stored
        an offset for (producer `acks=all`, offsets stored after the acknowledgement)."""
        if self.rng.random() < 0.25:
            time.sleep(self.rng.uniform(1.0, 2.0))
        else:
            self.wait_snapshot()
            time.sleep(self.rng.uniform(0.2, 2.0))
        done = self.snapshot_done()
        self.h.kafka.kill()
        time.sleep(self.rng.uniform(0.2, 2.0))
        self.h.kafka.start()
        self.result.detail = "broker killed " + ("after the snapshot" if done else
                                                 "during it")
        time.sleep(1.0)
        assert self.capture is not None
        if self.capture.poll() is not None:  # restarted as an operator would
            code = self.signal_capture(signal.SIGTERM)
            self.result.detail += f"; capture exited {code}, restarted"
            self.start_capture()

    def _topic_records(self) -> int:
        if self.h.store == "kafka":
            return kafka_records(self.h.kafka.bootstrap, self.topic)
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
        # The removed records were acknowledged (PostgreSQL: the slot confirmed past them), so
        # restarting the capture on the repaired log cannot bring them back.
        problem = self.st.acknowledged_check(removed)
        if problem:
            fails.append(problem)
        seg.write_bytes(backup)  # put the original bytes back; the trial goes on
        self.start_capture()

    def cleanup(self) -> None:
        self.writer.stop.set()
        if self.writer.is_alive():
            self.writer.join(30)
        if self.capture is not None:
            with contextlib.suppress(Exception):
                self.signal_capture(signal.SIGKILL)
        if self.pipeline is not None and self.pipeline.poll() is None:
            self.pipeline.kill()  # its JVM exits with it (Spark's gateway watches its stdin)
            self.pipeline.wait()
        self.st.cleanup()
        if not os.environ.get("HEADWATER_FAULT_KEEP"):
            shutil.rmtree(self.dir / "delta", ignore_errors=True)
            shutil.rmtree(self.warehouse, ignore_errors=True)
