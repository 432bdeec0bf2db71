"""A table of bad inputs through every entry point: each answer is one clear line naming the
property, file, flag or object, a non-zero exit status (or a 4xx status over REST), and never
a Python traceback.  And the REST API's config/validate says what `headwater check` says.

Runs in-process (typer's CliRunner, FastAPI's TestClient): the whole table takes seconds.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner, Result

from headwater.cli import app
from headwater.ops.logging import FORMAT_ENV
from headwater.server.app import build_app
from headwater.server.service import Service

PG = "io.debezium.connector.postgresql.PostgresConnector"


def pg(**over: str) -> dict[str, str]:
    """A valid PostgreSQL connector configuration (nothing listens on its port), changed by
    `over` ("-" removes a key)."""
    props = {"connector.class": PG, "database.hostname": "127.0.0.1", "database.port": "9",
             "database.user": "u", "database.password": "p", "database.dbname": "db",
             "topic.prefix": "srv", "headwater.topics.dir": "topics",
             "offset.storage.file.filename": "offsets.json", "errors.max.retries": "0"}
    props.update(over)
    return {k: v for k, v in props.items() if v != "-"}


def properties(props: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


KAFKA = {"headwater.topics.store": "kafka", "bootstrap.servers": "127.0.0.1:9"}

# Connector configurations with exactly one problem each, and what its message must name.
# They run through `run` and `check` below, and through REST in the equality test.
CONFIG_PROBLEMS: dict[str, tuple[dict[str, str], str]] = {
    "no-connector-class": (pg(**{"connector.class": "-"}), "connector.class"),
    "unknown-connector-class": (pg(**{"connector.class": "com.example.Nope"}),
                                "com.example.Nope"),
    "no-topic-prefix": (pg(**{"topic.prefix": "-"}), "topic.prefix"),
    "port-not-a-number": (pg(**{"database.port": "abc"}), "database.port"),
    "snapshot-mode-typo": (pg(**{"snapshot.mode": "initil"}), "snapshot.mode"),
    "unknown-property": (pg(**{"database.hostnme": "h"}), "database.hostnme"),
    "ops-key-misspelt": (pg(**{"headwater.ops.log.formt": "json"}), "headwater.ops.log.formt"),
    "ops-log-format-bad": (pg(**{"headwater.ops.log.format": "xml"}),
                           "headwater.ops.log.format"),
    "unknown-smt-class": (pg(transforms="x", **{"transforms.x.type": "com.example.Nope"}),
                          "transforms.x.type"),
    "smt-not-listed": (pg(**{"transforms.y.type":
                             "io.debezium.transforms.ExtractNewRecordState"}),
                       "transforms.y.type"),
    # (on Kafka: the local log refuses Avro records in any case, a second problem)
    "avro-without-registry": (pg(**{"value.converter":
                                    "io.confluent.connect.avro.AvroConverter",
                                    "headwater.topics.store": "kafka",
                                    "bootstrap.servers": "127.0.0.1:9"}),
                              "value.converter.schema.registry.url"),
    "unknown-converter": (pg(**{"value.converter": "com.example.Conv"}), "value.converter"),
    "kafka-without-bootstrap": (pg(**{"headwater.topics.store": "kafka"}),
                                "bootstrap.servers"),
    "offsets-topic-without-bootstrap": (pg(**{"offset.storage.topic": "offs"}),
                                        "bootstrap.servers"),
    "unknown-topic-store": (pg(**{"headwater.topics.store": "s3"}), "headwater.topics.store"),
    "kafka-settings-unused": (pg(**{"bootstrap.servers": "k:9092"}), "bootstrap.servers"),
    "producer-acks-1": (pg(**KAFKA, **{"producer.acks": "1"}), "producer.acks"),
    "producer-unknown": (pg(**KAFKA, **{"producer.no.such": "1"}), "producer.no.such"),
    "bad-jaas": (pg(**KAFKA, **{"sasl.jaas.config": "nonsense"}), "sasl.jaas.config"),
    "topic-creation-group-unlisted": (pg(**KAFKA, **{
        "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": "1",
        "topic.creation.g.partitions": "2"}), "topic.creation.g.partitions"),
    "pubsub-sink": (pg(**{"debezium.sink.type": "pubsub"}), "debezium.sink.type"),
    "kafka-sink-local-store": (pg(**{"debezium.sink.type": "kafka"}), "debezium.sink.type"),
    "avro-format": (pg(**{"debezium.format.value": "avro"}), "debezium.format.value"),
    "sink-setting-unread": (pg(**{"debezium.sink.pubsub.project.id": "p"}),
                            "debezium.sink.pubsub.project.id"),
    "datastream-with-smt": (pg(transforms="u", **{
        "transforms.u.type": "io.debezium.transforms.ExtractNewRecordState",
        "headwater.event.format": "datastream"}), "headwater.event.format=datastream"),
    "kafka-and-files": (pg(**KAFKA, **{"headwater.destination": "files"}),
                        "headwater.destination=files"),
    "retention-with-kafka": (pg(**KAFKA, **{"headwater.topics.retention.ms": "1000"}),
                             "headwater.topics.retention.ms"),
    "notification-sink-no-topic": (pg(**{"notification.enabled.channels": "sink"}),
                                   "notification.sink.topic.name"),
    "event-format-bogus": (pg(**{"headwater.event.format": "protobuf"}),
                           "headwater.event.format"),
    # Debezium's defaults ask for a validated certificate, which pymssql cannot do
    "sqlserver-tls-unvalidated": ({
        "connector.class": "io.debezium.connector.sqlserver.SqlServerConnector",
        "topic.prefix": "s", "database.hostname": "127.0.0.1", "database.port": "9",
        "database.user": "u", "database.names": "d", "headwater.topics.dir": "topics",
        "offset.storage.file.filename": "offsets.json", "errors.max.retries": "0"},
        "database.trustServerCertificate=false"),
    "negate-without-predicate": (pg(transforms="u", **{
        "transforms.u.type": "io.debezium.transforms.ExtractNewRecordState",
        "transforms.u.negate": "true"}), "transforms.u.negate"),
}


@dataclass(frozen=True)
class Case:
    """One CLI invocation: `args` ({tmp} is the case's directory) after `setup`, the exit
    status it must end with, and what its one error line must contain."""

    args: list[str]
    code: int
    names: str
    files: dict[str, str] = field(default_factory=dict)
    setup: Callable[[Path, pytest.MonkeyPatch], Any] | None = None


def missing(*modules: str) -> Callable[[Path, pytest.MonkeyPatch], None]:
    """Simulate `pip install headwater` without an extra: the modules cannot be imported."""
    def setup(_tmp: Path, mp: pytest.MonkeyPatch) -> None:
        for m in modules:
            mp.setitem(sys.modules, m, None)
    return setup


def listening(tmp: Path, _mp: pytest.MonkeyPatch) -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    (tmp / "port").write_text(str(sock.getsockname()[1]))
    return sock


def serving(tmp: Path, _mp: pytest.MonkeyPatch) -> Service:
    return Service.open(tmp / "data", "test:0")


def self_signed(tmp: Path, _mp: pytest.MonkeyPatch) -> None:
    (tmp / "cert.pem").write_text("-----BEGIN CERTIFICATE-----\nnot one\n"
                                  "-----END CERTIFICATE-----\n")
    (tmp / "key.pem").write_text("not a key\n")


C = "{tmp}/c.properties"
OK = properties(pg())


def _config_cases() -> dict[str, Case]:
    out: dict[str, Case] = {}
    for name, (props, names) in CONFIG_PROBLEMS.items():
        out[f"run-{name}"] = Case(["run", C], 2, names, {"c.properties": properties(props)})
        out[f"check-{name}"] = Case(["check", C], 2, names, {"c.properties": properties(props)})
    return out


CASES: dict[str, Case] = {
    **_config_cases(),
    # the configuration file itself
    "run-missing-file": Case(["run", "{tmp}/nope.properties"], 2, "nope.properties"),
    "run-unsupported-suffix": Case(["run", "{tmp}/c.txt"], 2, "c.txt", {"c.txt": OK}),
    "run-invalid-yaml": Case(["run", "{tmp}/c.yaml"], 2, "invalid YAML",
                             {"c.yaml": "a: [1\n"}),
    "run-invalid-json": Case(["run", "{tmp}/c.json"], 2, "invalid JSON", {"c.json": "{\n"}),
    "run-duplicate-properties": Case(["run", C], 2, "'topic.prefix' is given twice (first at "
                                     "line 7)", {"c.properties": OK + "topic.prefix=b\n"}),
    "check-duplicate-json": Case(["check", "{tmp}/c.json"], 2, "duplicate key 'topic.prefix' "
                                 "(lines 2 and 3)", {"c.json": '{"connector.class": "pg",\n'
                                                    '"topic.prefix": "a",\n'
                                                    '"topic.prefix": "b"}\n'}),
    "check-duplicate-yaml": Case(["check", "{tmp}/c.yaml"], 2, "duplicate key 'a'",
                                 {"c.yaml": "a: 1\nb: 2\na: 3\n"}),
    "check-not-utf8": Case(["check", C], 2, "not valid UTF-8",
                           {"c.properties": "a=\udcff\n"}),
    "check-missing-file": Case(["check", "{tmp}/nope.yaml"], 2, "nope.yaml"),
    "check-pipeline-mode": Case(["check", "{tmp}/p.properties"], 2, "headwater.pipeline.mode",
                                {"p.properties": "topic.prefix=srv\n"
                                                 "headwater.pipeline.mode=scd9\n"}),
    "check-pipeline-misspelt-key": Case(["check", C], 2, "unknown property "
                                        "'headwater.pipeline.mdoe' (did you mean "
                                        "'headwater.pipeline.mode'?)",
                                        {"c.properties": OK + "headwater.pipeline.mdoe=scd2\n"}),
    "pipeline-misspelt-key": Case(["pipeline", C, "--once"], 2, "'headwater.pipeline.mdoe'",
                                  {"c.properties": OK + "headwater.pipeline.mdoe=scd2\n"}),
    "check-pipeline-misspelt-namespace": Case(["check", C], 2, "unknown property "
                                              "'headwater.pipline.delta.path' (did you mean "
                                              "'headwater.pipeline.delta.path'?)",
                                              {"c.properties": OK
                                               + "headwater.pipline.delta.path=x\n"}),
    "check-secret-unresolved": Case(["check", C], 2, "/nonexistent/secrets.properties",
                                    {"c.properties": properties(pg(**{
                                        "database.password":
                                            "${file:/nonexistent/secrets.properties:pw}"}))}),
    # options of run
    "run-log-level": Case(["run", C, "--log-level", "LOUD"], 2, "--log-level",
                          {"c.properties": OK}),
    "run-log-format": Case(["run", C, "--log-format", "xml"], 2, "--log-format",
                           {"c.properties": OK}),
    "run-unknown-option": Case(["run", C, "--bogus"], 2, "--bogus", {"c.properties": OK}),
    "unknown-command": Case(["bogus"], 2, "bogus"),
    # missing optional dependencies, found before anything starts
    "run-kafka-not-installed": Case(["run", C], 1, "pip install 'headwater[kafka]'",
                                    {"c.properties": properties(pg(**KAFKA))},
                                    missing("confluent_kafka")),
    "run-offsets-topic-not-installed": Case(
        ["run", C], 1, "pip install 'headwater[kafka]'",
        {"c.properties": properties(pg(**{"offset.storage.topic": "o",
                                           "bootstrap.servers": "127.0.0.1:9"}))},
        missing("confluent_kafka")),
    "run-mongodb-not-installed": Case(
        ["run", C], 1, "pip install 'headwater[mongodb]'",
        {"c.properties": "connector.class=mongodb\ntopic.prefix=m\n"
                         "mongodb.connection.string=mongodb://127.0.0.1:9\n"},
        missing("pymongo")),
    "run-sqlserver-not-installed": Case(
        ["run", C], 1, "pip install 'headwater[sqlserver]'",
        {"c.properties": "connector.class=sqlserver\ntopic.prefix=s\n"
                         "database.hostname=h\ndatabase.user=u\ndatabase.names=d\n"
                         "database.trustServerCertificate=true\n"},
        missing("pymssql")),
    "check-kafka-not-installed": Case(["check", C], 2, "pip install 'headwater[kafka]'",
                                      {"c.properties": properties(pg(**KAFKA))},
                                      missing("confluent_kafka")),
    "pipeline-spark-not-installed": Case(
        ["pipeline", C, "--once"], 1, "pip install 'headwater[spark]'",
        {"c.properties": OK}, missing("pyspark")),
    "serve-server-not-installed": Case(["serve", "--data-dir", "{tmp}/data"], 1,
                                       "pip install 'headwater[server]'", {},
                                       missing("uvicorn")),
    # status
    "status-missing-file": Case(["status", "{tmp}/nope.properties"], 2, "nope.properties"),
    "status-damaged": Case(["status", C], 1, "offsets.status.json is damaged",
                           {"c.properties": OK, "offsets.status.json": "{\n"}),
    "status-not-a-status": Case(["status", C], 1, "offsets.status.json is damaged",
                                {"c.properties": OK, "offsets.status.json": "[1, 2]"}),
    "status-pipeline-damaged": Case(
        ["status", "{tmp}/p.properties"], 1, "is damaged",
        {"p.properties": "topic.prefix=srv\nheadwater.pipeline.checkpoint.dir=ck\n",
         "ck/status.json": "{"}),
    "status-bad-config": Case(["status", C], 2, "database.port",
                              {"c.properties": properties(pg(**{"database.port": "x"}))}),
    # offsets show
    "offsets-damaged": Case(["offsets", "show", C], 1, "offsets.json is not valid JSON",
                            {"c.properties": OK, "offsets.json": "{"}),
    "offsets-not-a-document": Case(["offsets", "show", C], 1, "offsets.json holds list",
                                   {"c.properties": OK, "offsets.json": "[]"}),
    "offsets-other-partition": Case(
        ["offsets", "show", C], 1, "belongs to partition",
        {"c.properties": OK,
         "offsets.json": '{"version": 1, "partition": {"server": "x"}, "offset": {}}'}),
    "offsets-unknown-version": Case(
        ["offsets", "show", C], 1, "was written by a newer Headwater (format 99)",
        {"c.properties": OK,
         "offsets.json": '{"version": 99, "partition": {"server": "srv"}, "offset": {}}'}),
    "offsets-kafka-no-bootstrap": Case(
        ["offsets", "show", C], 2, "bootstrap.servers",
        {"c.properties": properties(pg(**{"offset.storage.topic": "o"}))}),
    "offsets-missing-file": Case(["offsets", "show", "{tmp}/nope.json"], 2, "nope.json"),
    # topics
    "topics-list-missing-dir": Case(["topics", "list", "--dir", "{tmp}/none"], 1,
                                    "topics directory {tmp}/none (--dir) does not exist"),
    "topics-list-config-missing-dir": Case(["topics", "list", "--config", C], 1,
                                           "headwater.topics.dir of", {"c.properties": OK}),
    "topics-list-dir-is-file": Case(["topics", "list", "--dir", C], 1, "is not a directory",
                                    {"c.properties": OK}),
    "topics-verify-missing-dir": Case(["topics", "verify", "--dir", "{tmp}/none"], 1,
                                      "{tmp}/none"),
    "topics-verify-config-missing-dir": Case(["topics", "verify", C], 1, "does not exist",
                                             {"c.properties": OK}),
    "topics-tail-missing-dir": Case(["topics", "tail", "t", "--dir", "{tmp}/none"], 1,
                                    "{tmp}/none"),
    "topics-tail-unknown-topic": Case(["topics", "tail", "nope", "--dir", "{tmp}/topics"], 1,
                                      "no topic 'nope'", {"topics/.keep": ""}),
    "topics-list-kafka-no-bootstrap": Case(
        ["topics", "list", "--config", C], 2, "bootstrap.servers",
        {"c.properties": properties(pg(**{"headwater.topics.store": "kafka"}))}),
    "topics-verify-kafka": Case(["topics", "verify", C], 2, "the topics are in Kafka",
                                {"c.properties": properties(pg(**KAFKA))}),
    "topics-tail-kafka": Case(["topics", "tail", "t", "--config", C], 2,
                              "headwater.topics.store=kafka",
                              {"c.properties": properties(pg(**KAFKA))}),
    "topics-list-bad-config": Case(["topics", "list", "--config", C], 2, "topic.prefix",
                                   {"c.properties": properties(pg(**{"topic.prefix": "-"}))}),
    # validate
    "validate-sqlserver": Case(["validate", C], 2, "cannot read SQL Server",
                               {"c.properties": "connector.class=sqlserver\ntopic.prefix=s\n"
                                "database.hostname=h\ndatabase.user=u\n"
                                "database.names=d\ndatabase.encrypt=false\n"}),
    "validate-mongodb": Case(["validate", C], 2, "headwater.pipeline.mode: validate compares "
                             "MongoDB collections with scd1 and scd2 targets",
                             {"c.properties": "connector.class=mongodb\ntopic.prefix=m\n"
                              "mongodb.connection.string=mongodb://127.0.0.1:9\n"
                              "headwater.pipeline.mode=changelog\n"
                              "headwater.pipeline.delta.path=delta\n",
                              "delta/.keep": ""}),
    "validate-chunk-rows": Case(["validate", C, "--chunk-rows", "0"], 2, "--chunk-rows",
                                {"c.properties": OK}),
    # an Iceberg target is validated (through Spark), its warehouse checked first
    "validate-iceberg-warehouse": Case(["validate", C], 2,
                            "headwater.pipeline.iceberg.warehouse: ",
                            {"c.properties": properties(pg(**{
                                "headwater.pipeline.target": "iceberg",
                                "headwater.pipeline.delta.path": "delta"})),
                             "delta/.keep": ""}),
    # the database cannot be reached: one line, the driver's own line breaks joined
    "validate-unreachable": Case(["validate", C], 2, "validate failed: OperationalError",
                                 {"c.properties": properties(pg(**{
                                     "headwater.pipeline.mode": "changelog",
                                     "headwater.pipeline.delta.path": "delta"})),
                                  "delta/.keep": ""}),
    "validate-no-delta": Case(["validate", C], 2, "headwater.pipeline.delta.path",
                              {"c.properties": properties(pg(**{
                                  "headwater.pipeline.delta.path": "nowhere"}))}),
    "validate-bad-config": Case(["validate", C], 2, "snapshot.mode",
                                {"c.properties": properties(pg(**{
                                    "snapshot.mode": "x"}))}),
    # pipeline
    "pipeline-missing-topics": Case(["pipeline", C, "--once"], 2, "headwater.topics.dir",
                                    {"c.properties": OK}),
    "pipeline-mode": Case(["pipeline", C], 2, "headwater.pipeline.mode",
                          {"c.properties": properties(pg(**{
                              "headwater.pipeline.mode": "scd9"}))}),
    "pipeline-target": Case(["pipeline", C], 2, "headwater.pipeline.target",
                            {"c.properties": properties(pg(**{
                                "headwater.pipeline.target": "csv"}))}),
    "pipeline-log-level": Case(["pipeline", C, "--log-level", "LOUD"], 2, "--log-level",
                               {"c.properties": OK}),
    "pipeline-missing-file": Case(["pipeline", "{tmp}/nope.yaml"], 2, "nope.yaml"),
    # serve
    "serve-port-too-large": Case(["serve", "--port", "99999"], 2, "--port"),
    "serve-port-zero": Case(["serve", "--port", "0"], 2, "--port"),
    "serve-port-not-a-number": Case(["serve", "--port", "http"], 2, "--port"),
    "serve-port-in-use": Case(["serve", "--port", "{port}", "--data-dir", "{tmp}/data"], 1,
                              "cannot listen", {}, listening),
    "serve-token-file-missing": Case(["serve", "--token-file", "{tmp}/none"], 2,
                                     "--token-file"),
    "serve-token-file-empty": Case(["serve", "--token-file", "{tmp}/tok"], 2,
                                   "the token is empty (--token-file", {"tok": "\n"}),
    "serve-token-file-is-dir": Case(["serve", "--token-file", "{tmp}"], 2, "--token-file"),
    "serve-token-and-file": Case(["serve", "--token", "t", "--token-file", "{tmp}/tok"], 2,
                                 "--token and --token-file", {"tok": "t\n"}),
    "serve-tls-cert-missing": Case(["serve", "--tls-cert", "{tmp}/none", "--tls-key",
                                    "{tmp}/k"], 2, "--tls-cert", {"k": "x"}),
    "serve-tls-key-missing": Case(["serve", "--tls-cert", "{tmp}/c", "--tls-key",
                                   "{tmp}/none"], 2, "--tls-key", {"c": "x"}),
    "serve-tls-cert-alone": Case(["serve", "--tls-cert", "{tmp}/c"], 2,
                                 "--tls-cert and --tls-key go together", {"c": "x"}),
    "serve-tls-not-pem": Case(["serve", "--tls-cert", "{tmp}/cert.pem", "--tls-key",
                               "{tmp}/key.pem"], 2, "--tls-cert", {}, self_signed),
    "serve-log-level": Case(["serve", "--log-level", "LOUD"], 2, "--log-level"),
    "serve-log-format": Case(["serve", "--log-format", "xml"], 2, "--log-format"),
    "serve-data-dir-is-file": Case(["serve", "--data-dir", "{tmp}/f"], 2, "--data-dir",
                                   {"f": ""}),
    "serve-data-dir-in-use": Case(["serve", "--port", "{free}", "--data-dir", "{tmp}/data"],
                                  1, "is in use by another headwater serve (pid", {},
                                  serving),
    # streams and profiles
    "streams-describe-unknown": Case(["streams", "describe", "nope", "--data-dir",
                                      "{tmp}/data"], 2, "no stream 'nope'"),
    "streams-start-unknown": Case(["streams", "start", "nope", "--data-dir", "{tmp}/data"],
                                  2, "no stream 'nope'"),
    "check-secret-env-unset": Case(["check", C], 2, "HEADWATER_TEST_UNSET",
                                   {"c.properties": properties(pg(**{
                                       "database.password": "${env:HEADWATER_TEST_UNSET}"}))}),
    "streams-create-unknown-profile": Case(
        ["streams", "create", "s1", "--source", "nope", "--destination", "nope2",
         "--data-dir", "{tmp}/data"], 2, "nope"),
    "profiles-create-bad-kind": Case(["profiles", "create", "p1", "--kind", "oracle",
                                      "--data-dir", "{tmp}/data"], 2, "oracle"),
    "profiles-create-bad-property": Case(["profiles", "create", "p1", "--kind", "postgresql",
                                          "-p", "novalue", "--data-dir", "{tmp}/data"], 2,
                                         "'novalue'"),
    "streams-unknown-option": Case(["streams", "list", "--bogus"], 2, "--bogus"),
    "profiles-create-unknown-property": Case(
        ["profiles", "create", "p1", "--kind", "postgresql", "-p", "database.hostname=h",
         "-p", "database.user=u", "-p", "database.dbname=d", "-p", "sslmode=require",
         "--data-dir", "{tmp}/data"], 2,
        "unknown property 'sslmode' (did you mean 'database.sslmode'?)"),
}


@pytest.fixture(autouse=True)
def _isolated_logging(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`run`/`serve` set up the root logger on the runner's stderr: put it back after."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    monkeypatch.setenv(FORMAT_ENV, "text")
    monkeypatch.delenv("HEADWATER_DEBUG", raising=False)
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def invoke(case: Case, tmp: Path, mp: pytest.MonkeyPatch) -> tuple[Result, str]:
    for name, text in case.files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_bytes(text.encode("utf-8", "surrogateescape"))
    held = case.setup(tmp, mp) if case.setup is not None else None
    try:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        free = str(sock.getsockname()[1])
        sock.close()
        port = (tmp / "port").read_text() if (tmp / "port").exists() else free
        args = [a.replace("{tmp}", str(tmp)).replace("{port}", port).replace("{free}", free)
                for a in case.args]
        mp.chdir(tmp)
        result = CliRunner().invoke(app, args)
    finally:
        if isinstance(held, socket.socket | Service):
            held.close()
    return result, case.names.replace("{tmp}", str(tmp))


def error_line(result: Result) -> str:
    """The answer's one line: the last of stderr (or of stdout for `check`); any line before
    it must be a log line (`[time] LEVEL ...`), never a traceback or a framed box."""
    text = result.stderr.strip() or result.stdout.strip()
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines, "no message at all"
    for line in lines[:-1]:
        assert line.startswith("["), f"more than one line of error:\n{text}"
    return lines[-1]


def test_the_table_has_at_least_80_cases() -> None:
    assert len(CASES) >= 80


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_one_clear_line(name: str, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[name]
    result, names = invoke(case, tmp_path, monkeypatch)
    everything = result.stdout + result.stderr
    assert "Traceback" not in everything and "╭" not in everything, everything
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    assert result.exit_code == case.code, everything
    line = error_line(result)
    assert names in line, line


# -- REST -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One service for the REST cases (each is refused, so none leaves anything behind)."""
    svc = Service.open(tmp_path_factory.mktemp("rest") / "data", "test:0")
    try:
        with TestClient(build_app(svc), raise_server_exceptions=False) as c:
            yield c
    finally:
        svc.close()


def rest_problems(client: TestClient, config: dict[str, str]) -> list[str]:
    """The problems `config/validate` reports (each once, though listed under every property
    it names)."""
    plugin = config.get("connector.class", PG)
    if "." not in plugin:
        plugin = PG
    answer = client.put(f"/connector-plugins/{plugin}/config/validate", json=config)
    if answer.status_code != 200:
        return [answer.json()["message"]]
    found: list[str] = []
    for item in answer.json()["configs"]:
        for problem in item["value"]["errors"]:
            if problem not in found:
                found.append(problem)
    return found


def check_problems(tmp: Path, config: dict[str, str]) -> list[str]:
    path = tmp / "connector.json"
    path.write_bytes(orjson.dumps(config))
    result = CliRunner().invoke(app, ["check", str(path), "--json"])
    doc: dict[str, Any] = orjson.loads(result.stdout)
    return [p.replace(str(path), "connector.json") for p in doc["problems"]]


REST_COMPARABLE = sorted(k for k in CONFIG_PROBLEMS if k not in (
    # validate needs a plugin: without connector.class REST takes the path's, CLI cannot
    "no-connector-class", "unknown-connector-class"))


@pytest.mark.parametrize("name", REST_COMPARABLE)
def test_rest_config_validate_answers_what_check_answers(
        name: str, client: TestClient, tmp_path: Path) -> None:
    config, names = CONFIG_PROBLEMS[name]
    config = {**config, "name": "c1"}
    rest = rest_problems(client, config)
    cli = check_problems(tmp_path, config)
    assert cli and any(names in p for p in cli), cli
    assert sorted(rest) == sorted(cli)


@pytest.mark.parametrize("name", REST_COMPARABLE)
def test_rest_refuses_to_create_what_check_refuses(
        name: str, client: TestClient) -> None:
    config, names = CONFIG_PROBLEMS[name]
    answer = client.post("/connectors", json={"name": "c1", "config": config})
    assert answer.status_code == 400, answer.text
    message = answer.json()["message"]
    assert names in message and "Traceback" not in message
    assert client.get("/connectors").json() == []  # nothing was created
    put = client.put("/connectors/c2/config", json=config)
    assert put.status_code == 400 and names in put.json()["message"]


REST_CASES: dict[str, tuple[str, str, Any, int, str]] = {
    "create-no-name": ("POST", "/connectors", {"config": pg()}, 400, "name"),
    "create-bad-name": ("POST", "/connectors", {"name": "a/b", "config": pg()}, 400, "a/b"),
    "create-not-json": ("POST", "/connectors", "{", 400, "invalid request"),
    "create-unknown-class": ("POST", "/connectors",
                             {"name": "c", "config": pg(**{"connector.class": "x.Y"})}, 400,
                             "x.Y"),
    "create-kafka-not-installed": ("POST", "/connectors", {"name": "c", "config": pg(**KAFKA)},
                                   400, "pip install 'headwater[kafka]'"),
    "get-unknown": ("GET", "/connectors/nope", None, 404, "nope"),
    "stream-unknown-field": ("POST", "/streams?streamId=s9", {
        "sourceConfig": {"sourceConnectionProfile": "a"},
        "destinationConfig": {"destinationConnectionProfile": "b"},
        "backfillAll": {"oracleExcludedObjects": {}}}, 400,
        "backfillAll.oracleExcludedObjects: Extra inputs are not permitted"),
    "stream-unknown-profile": ("POST", "/streams?streamId=s9", {
        "sourceConfig": {"sourceConnectionProfile": "a"},
        "destinationConfig": {"destinationConnectionProfile": "b"}}, 404, "'a'"),
    "profile-unknown-field": ("POST", "/connectionProfiles?connectionProfileId=p2",
                              {"oracleProfile": {}}, 400, "oracleProfile"),
    "profile-unknown-property": ("POST", "/connectionProfiles?connectionProfileId=p1",
                                 {"postgresqlProfile": {"hostname": "h", "username": "u",
                                                        "database": "d", "sslmode": "x"}},
                                 400, "unknown property 'sslmode'"),
    "status-unknown": ("GET", "/connectors/nope/status", None, 404, "nope"),
    "plugin-unknown": ("PUT", "/connector-plugins/x.Y/config/validate", {}, 404, "x.Y"),
    "plugin-class-mismatch": ("PUT", f"/connector-plugins/{PG}/config/validate",
                              {"connector.class": "mongodb"}, 400, "mongodb"),
}


@pytest.mark.parametrize("name", sorted(REST_CASES))
def test_rest_bad_request_is_a_4xx_naming_it(name: str, client: TestClient,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    method, path, body, status, names = REST_CASES[name]
    if name == "create-kafka-not-installed":
        monkeypatch.setitem(sys.modules, "confluent_kafka", None)
    kw: dict[str, Any] = ({"content": body, "headers": {"content-type": "application/json"}}
                          if isinstance(body, str) else {"json": body} if body is not None
                          else {})
    answer = client.request(method, path, **kw)
    assert answer.status_code == status, answer.text
    message = answer.json()["message"]
    assert names in message and "Traceback" not in message, message


@pytest.mark.parametrize("document, names", [
    ('{"version": 99, "partition": {"server": "srv"}, "offset": {}}',
     "was written by a newer Headwater (format 99)"),
    ("{", "is not valid JSON"),
])
def test_rest_offsets_headwater_cannot_read_are_a_409_with_the_cli_line(
        document: str, names: str, client: TestClient, tmp_path: Path) -> None:
    """Failed on the old code: the offsets view answered 500 (StateFormatError escaped)."""
    offsets = tmp_path / "offsets.json"
    offsets.write_text(document)
    config = pg(**{"offset.storage.file.filename": str(offsets)})
    made = client.post("/connectors", json={"name": "newer", "config": config,
                                            "initial_state": "STOPPED"})
    assert made.status_code == 201, made.text
    try:
        (tmp_path / "c.properties").write_text(properties(config))
        cli = CliRunner().invoke(app, ["offsets", "show", str(tmp_path / "c.properties")])
        assert cli.exit_code == 1 and names in cli.stderr, cli.stderr
        for method, body in (("GET", None), ("PATCH", {"offsets": []})):
            answer = client.request(method, "/connectors/newer/offsets", json=body)
            assert answer.status_code == 409, answer.text
            assert f"error: {answer.json()['message']}" == error_line(cli)
        assert offsets.read_text() == document  # nothing was touched
    finally:
        assert client.delete("/connectors/newer").status_code == 204


def test_stream_backfill_exclusions_are_kept(client: TestClient, tmp_path: Path) -> None:
    # Failed on the old code: Datastream's postgresqlExcludedObjects was dropped silently
    # and the answer showed "backfillAll": {}.
    for name, body in (("bsrc", {"postgresqlProfile": {"hostname": "h", "username": "u",
                                                       "database": "d"}}),
                       ("bdst", {"destinationProfile": {"directory": str(tmp_path)}})):
        made = client.post(f"/connectionProfiles?connectionProfileId={name}", json=body)
        assert made.status_code == 201, made.text
    excluded = {"postgresqlSchemas": [{"schema": "public",
                                       "postgresqlTables": [{"table": "audit"}]}]}
    made = client.post("/streams?streamId=bs", json={
        "sourceConfig": {"sourceConnectionProfile": "bsrc"},
        "destinationConfig": {"destinationConnectionProfile": "bdst"},
        "backfillAll": {"postgresqlExcludedObjects": excluded}})
    assert made.status_code == 201, made.text
    assert made.json()["backfillAll"] == {"postgresqlExcludedObjects": excluded}
    assert client.get("/streams/bs").json()["backfillAll"] == {
        "postgresqlExcludedObjects": excluded}


def test_documents_need_the_token(tmp_path: Path) -> None:
    svc = Service.open(tmp_path / "data", "test:0")
    try:
        with TestClient(build_app(svc, token="s3cret")) as c:
            for path in ("/openapi.json", "/docs", "/connectors"):
                assert c.get(path).status_code == 401, path
                assert c.get(path, headers={"Authorization": "Bearer s3cret"}
                             ).status_code == 200, path
            assert "/connectors" in c.get("/openapi.json", headers={
                "Authorization": "Bearer s3cret"}).json()["paths"]
        with TestClient(build_app(svc)) as c:  # no token: open, as before
            assert c.get("/openapi.json").status_code == 200
            assert c.get("/docs").status_code == 200
    finally:
        svc.close()


def test_a_second_service_on_one_data_directory_is_refused(tmp_path: Path) -> None:
    from headwater.server.service import DataDirInUse

    first = Service.open(tmp_path / "data", "a:1")
    try:
        with pytest.raises(DataDirInUse, match=rf"--data-dir {tmp_path / 'data'} is in use by "
                           rf"another headwater serve \(pid {os.getpid()}\)"):
            Service.open(tmp_path / "data", "b:2")
    finally:
        first.close()
    Service.open(tmp_path / "data", "b:2").close()  # released on close


def test_debug_shows_the_traceback_of_a_bug(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_a: Any, **_k: Any) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr("headwater.capture.load_connector_config", broken)
    (tmp_path / "c.properties").write_text(OK)
    quiet = CliRunner().invoke(app, ["offsets", "show", str(tmp_path / "c.properties")])
    assert quiet.exit_code == 1
    assert quiet.stderr.strip() == ("internal error: KeyError: 'a bug' (a bug in headwater; "
                                    "`headwater --debug ...` shows the traceback)")
    loud = CliRunner().invoke(app, ["--debug", "offsets", "show",
                                    str(tmp_path / "c.properties")])
    assert isinstance(loud.exception, KeyError)  # re-raised: Python prints the traceback
