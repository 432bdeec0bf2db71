"""`guardrail.collections.max` as Debezium 3.x's CommonConnectorConfig.validateGuardrailLimits:
0 checks nothing, `warn` logs and goes on, `fail` stops; both values validated."""

from __future__ import annotations

import logging

import pytest

from headwater.config import ConfigError
from headwater.config.connector_common import Guardrail, GuardrailLimitExceeded
from headwater.connectors.postgres.config import CONNECTOR_CLASS, validate_postgres_config

LOG = logging.getLogger("test.guardrail")


def test_zero_checks_nothing(caplog: pytest.LogCaptureFixture) -> None:
    Guardrail(0, "fail").check([f"t{i}" for i in range(1000)], LOG)
    assert not caplog.records


def test_at_the_limit_passes_and_past_it_fails_with_the_counts() -> None:
    Guardrail(2, "fail").check(["a", "b"], LOG)
    with pytest.raises(GuardrailLimitExceeded, match=r"3 tables/collections .* at most 2"):
        Guardrail(2, "fail").check(["a", "b", "c"], LOG)


def test_warn_goes_on_and_says_why(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        Guardrail(1, "warn").check(["a", "b"], LOG, history_keeps_all=True)
    (record,) = caplog.records
    assert "2 tables/collections" in record.getMessage()
    assert "store.only.captured.tables.ddl=false" in record.getMessage()


def _load(**extra: str) -> Guardrail:
    cfg, _ = validate_postgres_config(
        {"connector.class": CONNECTOR_CLASS, "database.hostname": "h", "database.user": "u",
         "database.dbname": "d", "topic.prefix": "p", **extra}, env={})
    return cfg.guardrail


def test_the_properties_are_parsed_and_validated() -> None:
    assert _load(**{"guardrail.collections.max": "5",
                    "guardrail.collections.limit.action": "fail"}) == Guardrail(5, "fail")
    assert _load() == Guardrail(0, "warn")
    with pytest.raises(ConfigError, match=r"guardrail\.collections\.limit\.action"):
        _load(**{"guardrail.collections.limit.action": "stop"})
    with pytest.raises(ConfigError, match=r"guardrail\.collections\.max"):
        _load(**{"guardrail.collections.max": "-1"})
