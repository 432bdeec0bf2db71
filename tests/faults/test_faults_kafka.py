"""The fault harness's short form on the Kafka store (`headwater.topics.store=kafka`, one
Apache Kafka node from headwater.testing.kafka_cluster): the store's own fault kind,
`broker-kill9` (the broker killed with kill -9 and restarted on its data, mid-workload), on
PostgreSQL.  The other kinds on the Kafka store (and MariaDB on it) run in the long form
(test_faults.py, `--long`); in a file of its own so that it runs beside the other sources'
trials (see test_faults.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .harness import Harness
from .test_faults import BASE_SEED

pytestmark = pytest.mark.integration


def test_broker_kill9_loses_nothing(harness_for: Callable[[str], Harness]) -> None:
    harness = harness_for("postgres@kafka")
    result = harness.trial(BASE_SEED + 800, "broker-kill9")
    assert result.passed, result.line()
    assert result.validate_exit == 0 and result.target.clean and result.replayed.clean, \
        result.line()
