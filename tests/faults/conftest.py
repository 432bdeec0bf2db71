"""Fault-harness fixtures: one server per source for the module (started when a test first
needs it; some faults restart it), one Kafka broker for the trials on the Kafka store (also
started on first use), one Spark session for the pipeline's catch-up runs, and the long
form's options: `--long` (100 trials) or `--fault-trials N` (or HEADWATER_FAULT_TRIALS), and
`--fault-sources` (or HEADWATER_FAULT_SOURCES, default every source and store)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .harness import KAFKA_SOURCES, Harness
from .sources import SOURCES, Source

# What the long form draws from: every source on the local topic log, and the sources the
# pipeline reads from Kafka on the Kafka store ("postgres@kafka").
HARNESSES = (*SOURCES, *(f"{name}@kafka" for name in KAFKA_SOURCES))

# The long form's trials with `--long` and no count given.
LONG_TRIALS = 100


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fault-trials", type=int, default=None,
                     help="run the long fault harness with N random trials (--long alone: "
                          f"{LONG_TRIALS}); also HEADWATER_FAULT_TRIALS")
    parser.addoption("--fault-sources", default=None,
                     help="the long form's sources, comma-separated (default all: "
                          f"{','.join(HARNESSES)}); also HEADWATER_FAULT_SOURCES")


def fault_trials(config: pytest.Config) -> int:
    """The long form's trial count: `--fault-trials`, else HEADWATER_FAULT_TRIALS, else
    LONG_TRIALS with `--long` (or HEADWATER_LONG=1), else 0 (no long form)."""
    try:
        value = config.getoption("--fault-trials")
    except ValueError:  # the option is registered only when tests/faults is on the command line
        value = None
    if value is None and os.environ.get("HEADWATER_FAULT_TRIALS"):
        value = int(os.environ["HEADWATER_FAULT_TRIALS"])
    if value is None:
        long = config.getoption("--long", default=False) or os.environ.get("HEADWATER_LONG")
        value = LONG_TRIALS if long else 0
    return int(value)


def fault_sources(config: pytest.Config) -> list[str]:
    try:
        value = config.getoption("--fault-sources")
    except ValueError:
        value = None
    text = value or os.environ.get("HEADWATER_FAULT_SOURCES") or ",".join(HARNESSES)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in HARNESSES]
    if unknown or not names:
        raise pytest.UsageError(f"--fault-sources / HEADWATER_FAULT_SOURCES: unknown source(s) "
                                f"{', '.join(unknown) or '(none given)'}; the sources are "
                                f"{', '.join(HARNESSES)}")
    return names


class Servers:
    """One server per source, started on first use, all stopped at the module's end."""

    def __init__(self) -> None:
        self.started: dict[str, Source] = {}
        self.broker: Any = None

    def get(self, name: str) -> Source:
        if name not in self.started:
            source = SOURCES[name]()
            source.start()
            self.started[name] = source
        return self.started[name]

    def kafka(self) -> Any:
        """One Apache Kafka node (KRaft; headwater.testing.kafka_cluster), started on first
        use; the broker-kill9 fault kills and restarts it on its data."""
        if self.broker is None:
            pytest.importorskip("confluent_kafka")
            from headwater.testing.kafka_cluster import KafkaCluster

            self.broker = KafkaCluster(nodes=1).start()
        return self.broker

    def cleanup(self) -> None:
        for source in self.started.values():
            source.cleanup()
        if self.broker is not None:
            self.broker.cleanup()


@pytest.fixture(scope="module")
def fault_servers() -> Iterator[Servers]:
    servers = Servers()
    try:
        yield servers
    finally:
        servers.cleanup()


@pytest.fixture(scope="module")
def fault_spark() -> Iterator[Any]:
    from headwater.pipeline.runner import spark_session

    session = spark_session("headwater-faults", master="local[2]")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture()
def harness_for(fault_servers: Servers, fault_spark: Any,
                tmp_path: Path) -> Callable[..., Harness]:
    """A harness on the named source's server (started when first asked for)."""
    from headwater.pipeline.config import load_pipeline_config
    from headwater.pipeline.runner import close_query, start

    def pipeline_once(config: Path) -> None:
        # Spark waits a fixed 10 s for the topic source's Python worker to connect back; on a
        # machine loaded by other work it can start slower, and the query fails before its
        # first batch (nothing committed).  That start, and only that, is retried, as an
        # operator would rerun `--once`; any other failure fails the trial.
        for attempt in range(1, 7):
            query = start(fault_spark, load_pipeline_config(config), once=True)
            with contextlib.suppress(Exception):
                query.awaitTermination()
            # (the Kafka store's batch consumer: left open, it retried a stopped broker for
            # the rest of the module, filling the log)
            close_query(query)
            error = query.exception()
            if error is None:
                return
            if "Python worker failed to connect back" not in str(error) or attempt == 6:
                raise AssertionError(f"pipeline --once failed: {error}")
            print(f"[faults] pipeline --once: Spark's Python worker did not connect back in "
                  f"10 s (attempt {attempt}); retrying", flush=True)

    def make(name: str, target: str = "delta") -> Harness:
        """`name`: a source, or `source@kafka` for it on the Kafka store."""
        source, _, store = name.partition("@")
        return Harness(fault_servers.get(source), tmp_path / f"{source}-{store or 'local'}-"
                       f"{target}", pipeline_once=pipeline_once, target=target,
                       spark=fault_spark, store=store or "local",
                       kafka=fault_servers.kafka() if store == "kafka" else None)

    return make


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long form runs only when asked for (`--long`, `--fault-trials N`): otherwise it is
    deselected, not skipped, since CI counts a skipped test as a failure."""
    if fault_trials(config) > 0:
        return
    long_form = [item for item in items if item.name == "test_random_fault_trials"]
    if long_form:
        config.hook.pytest_deselected(items=long_form)
        items[:] = [item for item in items if item not in long_form]
