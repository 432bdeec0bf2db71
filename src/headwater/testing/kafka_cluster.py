"""Apache Kafka clusters (KRaft) on loopback, for the tests and the benchmarks.

The brokers are Apache Kafka itself (the `kafka` artifact set of headwater.jvm.artifacts:
`kafka_2.13` and `kafka-tools` from Maven Central), started with `java -cp`, so what passes
here has passed against the broker users run.  Every node is both broker and controller
(`process.roles=broker,controller`, a static `controller.quorum.voters`); storage is formatted
once with `kafka.tools.StorageTool format` and kept in a temporary folder, so a node killed with
SIGKILL, or the whole cluster stopped, comes back with its topics and records.

One node is enough for the fast tests; three nodes (replication factor 3,
`min.insync.replicas=2`) are what the failure tests need: a partition keeps taking `acks=all`
writes while one of its replicas is dead, and a leader can be killed without losing what
was acknowledged.

Readiness is a condition, never a sleep: a node is up when the cluster metadata, asked
through that node, lists every running broker (which in KRaft means the controller quorum has
a leader and the node has registered with it).

`auto.create.topics.enable=false`: Headwater must create its own topics (as a Connect worker
configured with `topic.creation.*` does); a topic created by a stray produce or metadata
request would hide a missing create and come with the broker's defaults.
"""

from __future__ import annotations

import base64
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headwater.testing.localpg import free_port
from headwater.testing.timeouts import scaled

KAFKA_SET = "kafka"


def random_cluster_id() -> str:
    """What `kafka.tools.StorageTool random-uuid` prints (Kafka's `Uuid.randomUuid()`: 16
    random bytes, URL-safe base64 without padding, never starting with "-"), without a JVM
    start of its own."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


class KafkaClusterError(RuntimeError):
    """A node did not format, start or become ready."""


@dataclass
class _Node:
    node_id: int
    port: int
    controller_port: int
    folder: Path
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


_LOG4J = """\
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.kafka.raft=WARN
"""

# Kafka's own code also reaches log4j 2 (log4j-core is in the set): the same file, as YAML.
_LOG4J2 = """\
Configuration:
  Appenders:
    File:
      name: file
      fileName: "{log}"
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: info
      AppenderRef:
        ref: file
"""


class KafkaCluster:
    """`nodes` KRaft nodes (each broker and controller) on loopback; `bootstrap` is the
    `bootstrap.servers` string of every node.  Node ids are 1..nodes."""

    def __init__(self, nodes: int = 1, base_dir: Path | None = None, heap: str = "384m",
                 config: dict[str, str] | None = None, quick_start: bool = True) -> None:
        """`quick_start`: the JVM compiles with C1 only and collects with the serial GC, which
        halves a broker's start-up CPU (about 12 s to 7 s here) at the cost of peak
        throughput: right for tests that start many short-lived clusters, wrong for a
        benchmark, which passes False."""
        if nodes < 1:
            raise ValueError(f"a cluster needs at least one node, not {nodes}")
        from headwater.jvm import artifacts

        self.classpath = artifacts.classpath(KAFKA_SET)
        self.java = shutil.which("java") or "java"
        self.base = Path(base_dir or tempfile.mkdtemp(prefix="headwater-kafka-"))
        self.heap = heap
        self.jvm_flags = (("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1") if quick_start
                          else ("-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20"))
        self.extra = dict(config or {})
        self.nodes = {i: _Node(i, free_port(), free_port(), self.base / f"node-{i}")
                      for i in range(1, nodes + 1)}
        self.cluster_id: str | None = None

    # -- addresses and the settings that follow from the size -----------------------------

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes.values())

    @property
    def replication_factor(self) -> int:
        """What topics get here: 3 on a cluster of three or more, else every node."""
        return min(len(self.nodes), 3)

    @property
    def min_insync_replicas(self) -> int:
        return 2 if self.replication_factor >= 3 else 1

    def _properties(self, node: _Node) -> str:
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}"
                          for n in self.nodes.values())
        rf, isr = str(self.replication_factor), str(self.min_insync_replicas)
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},"
                         f"CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(node.folder / "data"),
            "auto.create.topics.enable": "false",
            "default.replication.factor": rf,
            "min.insync.replicas": isr,
            "offsets.topic.replication.factor": rf,
            # 50 partitions x 3 replicas of __consumer_offsets is most of a small cluster's
            # start-up on two cores; five keep the coordinator path real.
            "offsets.topic.num.partitions": "5",
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": isr,
            "transaction.state.log.num.partitions": "5",
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": isr,
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
            "log.cleaner.threads": "1",
            "log.cleaner.dedupe.buffer.size": str(8 * 1024 * 1024),
            **self.extra,
        }
        return "".join(f"{k}={v}\n" for k, v in props.items())

    # -- processes --------------------------------------------------------------------------

    def _java(self, node: _Node, main: str, *args: str) -> list[str]:
        return [self.java, f"-Xmx{self.heap}", "-Xms64m", *self.jvm_flags,
                "-Djava.awt.headless=true",
                f"-Dlog4j.configuration=file:{node.folder / 'log4j.properties'}",
                f"-Dlog4j2.configurationFile={node.folder / 'log4j2.yaml'}",
                f"-Dkafka.logs.dir={node.folder / 'logs'}",
                "-cp", self.classpath, main, *args]

    @staticmethod
    def _write_logging(node: _Node, name: str) -> None:
        (node.folder / "log4j.properties").write_text(_LOG4J.format(log=node.folder / name))
        (node.folder / "log4j2.yaml").write_text(_LOG4J2.format(log=node.folder / name))

    def _format(self) -> None:
        """Writes every node's configuration and formats its storage with one cluster id (the
        nodes' StorageTool runs side by side)."""
        self.base.mkdir(parents=True, exist_ok=True)
        cluster_id = random_cluster_id()
        runs: dict[int, subprocess.Popen[str]] = {}
        for node in self.nodes.values():
            node.folder.mkdir(parents=True, exist_ok=True)
            (node.folder / "server.properties").write_text(self._properties(node))
            self._write_logging(node, "server.log")
            runs[node.node_id] = subprocess.Popen(
                self._java(node, "kafka.tools.StorageTool", "format", "-t", cluster_id,
                           "-c", str(node.folder / "server.properties")),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        failed = []
        for node_id, run in runs.items():
            out, _ = run.communicate(timeout=120)
            if run.returncode != 0:
                failed.append(f"node {node_id}: {out[-2000:]}")
        if failed:
            raise KafkaClusterError("StorageTool format failed: " + "; ".join(failed))
        self.cluster_id = cluster_id

    def _launch(self, node: _Node) -> None:
        if node.running:
            return
        node.starts += 1
        with open(node.folder / f"stdout-{node.starts}.log", "wb") as out:
            node.proc = subprocess.Popen(
                self._java(node, "kafka.Kafka", str(node.folder / "server.properties")),
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def start(self, timeout: float = 120) -> KafkaCluster:
        """Formats on first use, starts every node that is not running, waits until ready."""
        if self.cluster_id is None:
            self._format()
        for node in self.nodes.values():
            self._launch(node)
        self.wait_ready(timeout)
        return self

    def start_node(self, node_id: int, timeout: float = 120) -> None:
        self._launch(self._node(node_id))
        self.wait_ready(timeout)

    def stop_node(self, node_id: int, timeout: float = 60) -> None:
        """Graceful stop (SIGTERM: controlled shutdown moves its leaderships first)."""
        node = self._node(node_id)
        if node.proc is not None and node.proc.poll() is None:
            node.proc.send_signal(signal.SIGTERM)
            try:
                node.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                node.proc.kill()
                node.proc.wait()
        node.proc = None

    def kill(self, node_id: int | None = None) -> None:
        """kill -9 of one node (or of every node): a crash as its clients see it."""
        for node in ([self._node(node_id)] if node_id is not None else self.nodes.values()):
            if node.proc is not None and node.proc.poll() is None:
                node.proc.kill()
                node.proc.wait()
            node.proc = None

    def restart_node(self, node_id: int, *, kill: bool = False, timeout: float = 120) -> None:
        """Stops (or kills) one node and starts it again with its data; waits until ready."""
        if kill:
            self.kill(node_id)
        else:
            self.stop_node(node_id)
        self.start_node(node_id, timeout)

    def stop(self) -> None:
        """Stops every node gracefully, keeping the data: `start()` brings the cluster back."""
        for node in self.nodes.values():
            if node.proc is not None and node.proc.poll() is None:
                node.proc.send_signal(signal.SIGTERM)
        for node_id in self.nodes:
            self.stop_node(node_id)

    def restart(self, *, kill: bool = False, timeout: float = 120) -> None:
        """The whole cluster stopped (or killed) and started again with its data."""
        if kill:
            self.kill()
        else:
            self.stop()
        self.start(timeout)

    def cleanup(self) -> None:
        self.kill()
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    def _node(self, node_id: int) -> _Node:
        if node_id not in self.nodes:
            raise KafkaClusterError(f"no node {node_id}; nodes are {sorted(self.nodes)}")
        return self.nodes[node_id]

    def running(self) -> list[int]:
        return [n.node_id for n in self.nodes.values() if n.running]

    # -- readiness and metadata -------------------------------------------------------------

    def _failed(self) -> str | None:
        for node in self.nodes.values():
            if node.proc is not None and node.proc.poll() is not None:
                log = node.folder / f"stdout-{node.starts}.log"
                server = node.folder / "server.log"
                tail = (log.read_text(errors="replace")[-1500:] if log.exists() else "") + \
                    (server.read_text(errors="replace")[-1500:] if server.exists() else "")
                return f"node {node.node_id} exited ({node.proc.returncode}): {tail}"
        return None

    def wait_ready(self, timeout: float = 120) -> None:
        """Until every running node listens and answers metadata listing every running
        broker (the port first: a metadata request to a closed port only makes noise)."""
        want = set(self.running())
        deadline = time.monotonic() + scaled(timeout)
        last = ""
        admins: dict[int, Any] = {}
        while True:
            failed = self._failed()
            if failed:
                raise KafkaClusterError(failed)
            pending = [i for i in sorted(want) if not self._sees(i, want, admins)]
            if not pending:
                return
            last = f"node {pending[0]} not ready"
            if time.monotonic() > deadline:
                raise KafkaClusterError(f"Kafka nodes {sorted(want)} not ready after "
                                        f"{timeout:.0f}s ({last})")
            time.sleep(0.2)

    def _sees(self, node_id: int, want: set[int], admins: dict[int, Any]) -> bool:
        port = self.nodes[node_id].port
        if node_id not in admins:
            with socket.socket() as s:
                s.settimeout(0.2)
                if s.connect_ex(("127.0.0.1", port)) != 0:
                    return False
            from confluent_kafka.admin import AdminClient

            admins[node_id] = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}",
                                           "log_level": 0})
        try:
            brokers = set(admins[node_id].list_topics(timeout=2).brokers)
        except Exception:  # KafkaException: not serving metadata yet
            return False
        return want <= brokers

    def admin(self) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap})

    def leader(self, topic: str, partition: int, timeout: float = 30,
               exclude: tuple[int, ...] = ()) -> int:
        """The node id leading `topic`/`partition`, waiting while it has none or while the
        leader is one of `exclude` (after a kill: until the cluster has moved leadership)."""
        admin = self.admin()
        deadline = time.monotonic() + scaled(timeout)
        while True:
            meta = admin.list_topics(topic, timeout=5).topics.get(topic)
            part = meta.partitions.get(partition) if meta is not None and meta.error is None \
                else None
            if part is not None and part.error is None and part.leader >= 0 \
                    and part.leader not in exclude:
                return int(part.leader)
            if time.monotonic() > deadline:
                raise KafkaClusterError(f"no leader for {topic}[{partition}] outside "
                                        f"{list(exclude)} after {timeout}s")
            time.sleep(0.1)

    def leaders(self, topic: str) -> dict[int, int]:
        """partition -> leader node id, for every partition of `topic`."""
        meta = self.admin().list_topics(topic, timeout=10).topics[topic]
        return {p: self.leader(topic, p) for p in sorted(meta.partitions)}

    def wait_in_sync(self, timeout: float = 120) -> None:
        """Until every partition of every topic has all its replicas in sync: after a node
        comes back, before the next failure, so `min.insync.replicas` still holds then."""
        admin = self.admin()
        deadline = time.monotonic() + scaled(timeout)
        while True:
            lagging = [f"{name}[{p}]"
                       for name, meta in admin.list_topics(timeout=10).topics.items()
                       for p, part in meta.partitions.items()
                       if set(part.isrs) != set(part.replicas) or part.leader < 0]
            if not lagging:
                return
            if time.monotonic() > deadline:
                raise KafkaClusterError(f"partitions not in sync after {timeout}s: "
                                        f"{', '.join(sorted(lagging)[:10])}")
            time.sleep(0.2)

    def create_topic(self, name: str, partitions: int = 1,
                     config: dict[str, str] | None = None) -> None:
        """Creates a topic (this cluster's replication factor) and waits until every node
        knows it, so a test's first produce does not race the metadata."""
        from confluent_kafka.cimpl import NewTopic

        admin = self.admin()  # kept referenced: a collected client fails its futures
        futures = admin.create_topics([NewTopic(name, partitions, self.replication_factor,
                                                config=config or {})])
        for future in futures.values():
            future.result(30)
        for p in range(partitions):
            self.leader(name, p)
