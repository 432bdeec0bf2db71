"""End to end under kill -9: a random document workload, `headwater run` and `headwater
pipeline` as subprocesses each killed with SIGKILL and restarted, and at the end the Delta table
(SCD1) equals the collection document by document, field by field, in the types the document
path gives them (docs/pipeline.md, MongoDB section); the same into PostgreSQL and MariaDB
over JDBC, where sub-documents and arrays are JSON text.

The workload covers what the document path must fold: inserts, full replacements, ``$set`` on
nested paths, ``$unset``, ``$push``/``$pop`` on arrays, ``$inc``, deletes and multi-document
transactions.  With ``capture.mode=change_streams`` updates are patches (``updateDescription``)
the pipeline applies to the previous state, so a lost or repeated event would show.

An incremental snapshot of the collection (signal at the first round) runs across the kills,
so its READs, ordered by the pipeline among the stream events, must not undo a later change.

The short forms (one round of kills, full-document and patch updates) run in CI; the four-round
variants are `long` (run with `--long` or HEADWATER_LONG=1).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.mongodb.extended_json import id_json
from headwater.testing.localpg import failing_fast
from headwater.testing.replay import events
from tests.integration.postgres.conftest import pg  # noqa: F401 (fixtures)
from tests.pipeline_jdbc.conftest import TargetDb, mariadb  # noqa: F401 (fixtures)

from .conftest import MongoEnv, wait

pytestmark = pytest.mark.integration

EPOCH = datetime.datetime(2024, 1, 1)
SENTINEL = -1


def _doc(rng: random.Random, key: int) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "_id": key, "name": f"n{rng.randrange(1000)}", "n": rng.randrange(1000),
        "score": rng.randrange(1000) + 0.5,
        "nested": {"a": rng.randrange(100), "b": {"c": f"c{rng.randrange(10)}"}},
        "tags": [f"t{rng.randrange(20)}" for _ in range(rng.randrange(4))],
        "when": EPOCH + datetime.timedelta(milliseconds=rng.randrange(10**9)),
    }
    for field in ("score", "tags", "nested"):  # replacements may leave fields out
        if rng.random() < 0.1:
            del doc[field]
    return doc


class Workload(threading.Thread):
    """Random writes on `c` until stopped."""

    def __init__(self, env: MongoEnv, seed: int, keys: int) -> None:
        super().__init__(daemon=True)
        self.env, self.rng, self.next_key = env, random.Random(seed), keys
        self.stop = threading.Event()
        self.ops = 0
        self.error: BaseException | None = None

    def _several(self, session: Any, n: int) -> None:
        for _ in range(n):
            self._one(session)

    def _one(self, session: Any = None) -> None:
        rng, coll = self.rng, self.env.db.c
        k = rng.randrange(self.next_key)
        roll = rng.random()
        if roll < 0.12:
            self.next_key += 1
            coll.insert_one(_doc(rng, self.next_key), session=session)
        elif roll < 0.2:
            doc = _doc(rng, k)
            del doc["_id"]
            coll.replace_one({"_id": k}, doc, session=session)
        elif roll < 0.35:
            coll.update_one({"_id": k}, {"$set": {"nested.b.c": f"s{self.ops}",
                                                  "nested.a": rng.randrange(100)}},
                            session=session)
        elif roll < 0.45:
            coll.update_one({"_id": k}, {"$unset": {rng.choice(["score", "nested.b", "tags"]):
                                                    ""}}, session=session)
        elif roll < 0.6:
            coll.update_one({"_id": k}, {"$push": {"tags": f"p{self.ops % 50}"}},
                            session=session)
        elif roll < 0.7:
            coll.update_one({"_id": k, "tags": {"$type": "array"}},
                            {"$pop": {"tags": rng.choice([1, -1])}}, session=session)
        elif roll < 0.85:
            coll.update_one({"_id": k}, {"$inc": {"n": 1}, "$set": {"name": f"u{self.ops}"}},
                            session=session)
        else:
            coll.delete_one({"_id": k}, session=session)
        self.ops += 1

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                if self.rng.random() < 0.15:
                    n = self.rng.randint(2, 4)
                    with self.env.client.start_session() as s:
                        s.with_transaction(lambda s, n=n: self._several(s, n))
                else:
                    self._one()
                time.sleep(0.002)
        except BaseException as exc:
            self.error = exc


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "headwater.cli", *args]


class Procs:
    """The capture and the pipeline as subprocesses (each its own process group, so a kill
    takes the pipeline's JVM with it)."""

    def __init__(self, env: MongoEnv, config: Path) -> None:
        self.env, self.config = env, config
        self.capture: subprocess.Popen[bytes] | None = None
        self.pipeline: subprocess.Popen[bytes] | None = None
        self.logs = env.tmp / "logs"
        self.logs.mkdir(exist_ok=True)
        self.starts = 0

    def _start(self, *args: str) -> subprocess.Popen[bytes]:
        self.starts += 1
        log = (self.logs / f"{args[0]}-{self.starts}.log").open("wb")
        return subprocess.Popen(_cli(*args, "--log-level", "WARNING"), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env=dict(os.environ))

    def start_capture(self) -> None:
        self.capture = self._start("run", str(self.config))

    def start_pipeline(self) -> None:
        self.pipeline = self._start("pipeline", str(self.config))

    def alive(self) -> None:
        for proc in (self.capture, self.pipeline):
            if proc is not None and proc.poll() is not None:
                raise AssertionError(f"{proc.args!r} exited {proc.returncode}: see {self.logs}")

    def until(self, done: Callable[[], object]) -> Callable[[], object]:
        """A wait predicate: done()'s result, failing at once when a process has exited."""
        return failing_fast(done, self.alive)

    @staticmethod
    def kill(proc: subprocess.Popen[bytes] | None, sig: int = signal.SIGKILL) -> None:
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        proc.wait(timeout=120)

    def stop(self) -> None:
        self.kill(self.capture)
        self.kill(self.pipeline)


def _plain(value: Any) -> Any:
    """A document value as the Delta row holds it (long, double, string, struct, array,
    timestamp in UTC)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
    return value


def _same(expected: Any, actual: Any, where: str, problems: list[str]) -> None:
    if isinstance(actual, dict) and (expected is None or isinstance(expected, dict)):
        exp = expected or {}
        if expected is None and any(v is not None for v in actual.values()):
            problems.append(f"{where}: expected null, got {actual!r}")
            return
        for name in set(exp) | set(actual):
            if name not in actual:
                problems.append(f"{where}.{name}: no such column in the target")
            else:
                _same(exp.get(name), actual[name], f"{where}.{name}", problems)
        return
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            _same(e, a, f"{where}[{i}]", problems)
        return
    if isinstance(actual, datetime.datetime) and actual.tzinfo is None:
        actual = actual.replace(tzinfo=datetime.UTC)
    if expected != actual or (expected is not None and type(expected) is not type(actual)):
        problems.append(f"{where}: expected {expected!r}, got {actual!r}")


def compare(source: dict[int, dict[str, Any]], target: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    rows = {row["_id"]: row for row in target}
    if len(rows) != len(target):
        problems.append("duplicate _id rows in the target")
    for key in sorted(set(source) - set(rows)):
        problems.append(f"document {key} missing from the target")
    for key in sorted(set(rows) - set(source)):
        problems.append(f"row {key} in the target is no document of the collection")
    for key in sorted(set(source) & set(rows)):
        _same(_plain(source[key]), rows[key], f"_id {key}", problems)
    return problems


def _topic_has(env: MongoEnv, key: int) -> bool:
    topic = env.topic("c")
    if not (env.topics / topic).exists():
        return False
    wanted = id_json(key)
    return any(k is not None and k.get("id") == wanted for _, k, _v in events(env.topics, topic))


def run_scenario(env: MongoEnv, mode: str, rounds: int, seed: int,
                 jdbc: TargetDb | None = None) -> None:
    rng = random.Random(seed)
    initial = 1500
    seeding = random.Random(seed + 1)
    env.db.c.insert_many([_doc(seeding, k) for k in range(initial)])
    config = env.config({
        "capture.mode": mode, "max.batch.size": 200, "snapshot.fetch.size": 200,
        "collection.include.list": f"{env.db_name}\\.c",
        "signal.data.collection": f"{env.db_name}.signals",
        "incremental.snapshot.chunk.size": 100,
        "headwater.pipeline.delta.path": env.tmp / "delta",
        "headwater.pipeline.checkpoint.dir": env.tmp / "checkpoint",
        "headwater.pipeline.trigger.interval.ms": 500,
        "headwater.pipeline.max.records.per.trigger": 3000,
        **(jdbc.props() if jdbc is not None else {}),
    })
    procs = Procs(env, config)
    workload = Workload(env, seed, initial)
    delta = env.tmp / "delta" / env.db_name / "c"
    first_batch: Callable[[], object] = (
        (delta / "_delta_log").is_dir if jdbc is None else lambda: "c" in jdbc.tables())
    try:
        procs.start_capture()
        wait(procs.until(lambda: env.offset().get("snapshot_completed")), "the snapshot",
             120, interval=0.05)
        workload.start()
        procs.start_pipeline()
        for round_no in range(rounds):
            if round_no == 0:  # an incremental snapshot interleaved with the kills
                env.db.signals.insert_one({"_id": "again", "type": "execute-snapshot",
                                           "data": {"data-collections": [f"{env.db_name}.c"]}})
            # the capture: killed 1-2 times, at random moments of the stream
            for _ in range(rng.randint(1, 2)):
                time.sleep(rng.uniform(0.5, 3.0))
                procs.alive()
                procs.kill(procs.capture)
                procs.start_capture()
            # the pipeline: killed once its first batch is in the table, inside or between
            # batches
            wait(procs.until(first_batch), "the first batch",
                 120, interval=0.05)
            time.sleep(rng.uniform(0.0, 4.0))
            procs.alive()
            procs.kill(procs.pipeline)
            procs.start_pipeline()
        time.sleep(2)
        workload.stop.set()
        workload.join()
        assert workload.error is None, workload.error
        env.db.c.insert_one(_doc(random.Random(0), SENTINEL))  # after every other write
        wait(procs.until(lambda: _topic_has(env, SENTINEL)), "the capture to catch up",
             120, interval=0.2)
        procs.kill(procs.capture, signal.SIGTERM)
        procs.kill(procs.pipeline)
        out = subprocess.run(_cli("pipeline", str(config), "--once", "--log-level", "WARNING"),
                             capture_output=True, text=True, timeout=600, check=False)
        assert out.returncode == 0, out.stderr[-3000:]
    finally:
        workload.stop.set()
        procs.stop()
    from headwater.pipeline.delta_target import read_table

    source = {d["_id"]: d for d in env.db.c.find()}
    rows = read_table(delta).to_pylist() if jdbc is None else [
        {k: json.loads(v) if k in ("nested", "tags") and v is not None else v
         for k, v in r.items()} for r in jdbc.rows("c")]  # (JSON text over JDBC)
    problems = compare(source, rows)
    assert not problems, (f"{len(problems)} differences after {workload.ops} operations "
                          f"({procs.starts} process starts): " + json.dumps(problems[:20]))
    assert workload.ops > 100
    assert any(v is not None and v["op"] == "r" and v["source"]["snapshot"] == "incremental"
               for _, _k, v in events(env.topics, env.topic("c")))


@pytest.mark.parametrize(("mode", "rounds"), [
    pytest.param("change_streams_update_full", 1, id="full-documents"),
    pytest.param("change_streams", 1, id="patches", marks=[pytest.mark.slow, pytest.mark.long]),
    pytest.param("change_streams_update_full", 4, id="full-documents-long",
                 marks=[pytest.mark.slow, pytest.mark.long]),
    pytest.param("change_streams", 4, id="patches-long",
                 marks=[pytest.mark.slow, pytest.mark.long]),
])
def test_kill9_capture_and_pipeline_end_with_the_collection_in_delta(
        env: MongoEnv, mode: str, rounds: int) -> None:
    run_scenario(env, mode, rounds, seed=int(os.environ.get("HEADWATER_E2E_SEED", "11")))


@pytest.mark.parametrize("kind", ["postgres", "mariadb"])
@pytest.mark.parametrize("mode", [
    "change_streams_update_full",
    pytest.param("change_streams", marks=[pytest.mark.slow, pytest.mark.long])])
def test_kill9_capture_and_pipeline_end_with_the_collection_over_jdbc(
        env: MongoEnv, mode: str, kind: str, pg: Any,  # noqa: F811
        request: pytest.FixtureRequest) -> None:
    from tests.pipeline_jdbc.conftest import make_target

    run_scenario(env, mode, 1, seed=int(os.environ.get("HEADWATER_E2E_SEED", "11")),
                 jdbc=make_target(kind, pg, request))
