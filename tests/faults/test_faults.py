"""Nothing silent: random workloads on a real PostgreSQL, MariaDB or MongoDB, one fault per
trial (capture kill -9 during the snapshot or streaming, SIGTERM, pipeline kill -9, server
restart, replication connection cut, damaged topic segment, Kafka broker kill -9), then
`headwater validate`, a topic replay and a row count of the Delta target must all agree with
the source.  See tests/faults/harness.py, tests/faults/sources.py and docs/faults.md.

Short form (CI): one trial per source and fault kind (`Source.ci_faults`; the Kafka store's
own kind in test_faults_kafka.py).  Long form: `--long` (100 trials) or `--fault-trials N`
(or HEADWATER_FAULT_TRIALS=N), N random trials over the sources and stores (`--fault-sources`,
HEADWATER_FAULT_SOURCES; default every one, `postgres@kafka` and `mariadb@kafka` included)
from the seed HEADWATER_FAULT_SEED (printed)."""

from __future__ import annotations

import os
import random
from collections.abc import Callable

import pytest

from .conftest import fault_sources, fault_trials
from .harness import KNOWN_DEFECTS, Harness, TrialResult, summary
from .sources import SOURCES

pytestmark = pytest.mark.integration

BASE_SEED = int(os.environ.get("HEADWATER_FAULT_SEED", "20240"))


def cases(only: str) -> list[object]:
    """The short form's trials of one source: one file per source, so that the suite's
    processes (`--dist loadfile`) run the sources' trials side by side."""
    out: list[object] = []
    for i, (name, source) in enumerate(SOURCES.items()):
        if name != only:
            continue
        for j, kind in enumerate(source.ci_faults):
            seed = BASE_SEED + 100 * i + j  # PostgreSQL's seeds are the ones it always had
            reason = KNOWN_DEFECTS.get(f"{name}/{kind}")
            out.append(pytest.param(name, kind, seed, id=f"{name}-{kind}", marks=[
                pytest.mark.xfail(strict=False, reason=reason)] if reason else []))
    return out


def one_fault(harness_for: Callable[[str], Harness], source: str, fault: str,
                   seed: int) -> None:
    result = harness_for(source).trial(seed, fault)
    assert result.passed, result.line()


@pytest.mark.parametrize(("source", "fault", "seed"), cases("postgres"))
def test_one_fault(harness_for: Callable[[str], Harness], source: str, fault: str,
                   seed: int) -> None:
    one_fault(harness_for, source, fault, seed)


# Iceberg targets: the pipeline killed (-9) mid-run into Iceberg, then `--once`; validate
# reads the Iceberg table (in the module's Spark session) and so does the harness's count.
# Both with `--long` only: in CI, postgres/pipeline-kill9 above is the pipeline's kill (on
# Delta), and tests/pipeline/test_iceberg_target.py crashes the Iceberg target at each commit
# step; this trial cost 3-5 minutes of CI (a second pipeline JVM and its catch-up).
ICEBERG_FAULTS = ("pipeline-kill9", "capture-kill9-stream")


@pytest.mark.long
@pytest.mark.parametrize("fault", ICEBERG_FAULTS)
def test_one_fault_iceberg(harness_for: Callable[..., Harness], fault: str) -> None:
    seed = BASE_SEED + 900 + ICEBERG_FAULTS.index(fault)
    result = harness_for("postgres", "iceberg").trial(seed, fault)
    assert result.passed, result.line()
    assert result.validate_exit == 0 and result.target.clean, result.line()


def _source_of(seed: int, names: list[str]) -> str:
    """The trial's source, from its seed (apart from the trial's own choices)."""
    return names[random.Random(seed * 7919 + 1).randrange(len(names))]


@pytest.mark.slow
@pytest.mark.timeout(0)  # N trials of ~15-200 s each; every trial has its own time limits
def test_random_fault_trials(harness_for: Callable[[str], Harness],
                             request: pytest.FixtureRequest,
                             capsys: pytest.CaptureFixture[str]) -> None:
    n = fault_trials(request.config)  # > 0: conftest deselects the long form otherwise
    names = fault_sources(request.config)
    base = int(os.environ.get("HEADWATER_FAULT_SEED") or random.randrange(10**6))
    only = os.environ.get("HEADWATER_FAULT_KIND") or None

    def log(line: str) -> None:  # live, past pytest's capture: a long run shows its progress
        with capsys.disabled():
            print(line, flush=True)

    harnesses: dict[str, Harness] = {}
    log(f"[faults] long form: {n} trials over {', '.join(names)} from seed {base}")
    results: list[TrialResult] = []
    for i in range(n):
        name = _source_of(base + i, names)
        if name not in harnesses:
            harnesses[name] = harness_for(name)
            harnesses[name].log = log
        kinds = harnesses[name].faults
        results.append(harnesses[name].trial(base + i, only if only in kinds else None))
    text = summary(results)
    log(text)
    failed = [r for r in results if not r.passed]
    unknown = [r for r in failed if f"{r.source}/{r.fault}" not in KNOWN_DEFECTS]
    assert not unknown, text + "\n" + "\n".join(r.line() for r in unknown)
    if failed:
        pytest.xfail(f"{text}; known defects only: " + "; ".join(
            f"{KNOWN_DEFECTS[f'{r.source}/{r.fault}']} (seed {r.seed})" for r in failed))
