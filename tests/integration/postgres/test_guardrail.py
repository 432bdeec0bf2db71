"""`guardrail.collections.max` against a real PostgreSQL: the captured tables are counted after
the include list is resolved; `fail` stops the start, `warn` captures all the same."""

from __future__ import annotations

import logging

import pytest

from headwater.config.connector_common import GuardrailLimitExceeded

from .conftest import Env, wait_for

pytestmark = pytest.mark.integration


def _tables(env: Env) -> None:
    for name in ("a", "b", "c"):
        env.sql(f"CREATE TABLE {name} (id int PRIMARY KEY)")
        env.sql(f"INSERT INTO {name} VALUES (1)")


def _topics(env: Env) -> list[str]:
    """The topics written (the log's own format stamp aside)."""
    if not env.topics.exists():
        return []
    return sorted(p.name for p in env.topics.iterdir() if not p.name.startswith("."))


def test_fail_stops_the_start_past_the_limit(env: Env) -> None:
    _tables(env)
    cap = env.capture({"guardrail.collections.max": 2,
                       "guardrail.collections.limit.action": "fail"})
    wait_for(lambda: cap.error is not None, what="the start to fail")
    with pytest.raises(GuardrailLimitExceeded, match=r"3 tables/collections .* at most 2"):
        cap.stop()
    assert _topics(env) == []


def test_the_include_list_is_what_counts(env: Env) -> None:
    _tables(env)
    cap = env.capture({"guardrail.collections.max": 2,
                       "guardrail.collections.limit.action": "fail",
                       "table.include.list": "public.a,public.b"})
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed or cap.error, what="snapshot")
    finally:
        cap.stop()


def test_warn_captures_every_table(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    _tables(env)
    with caplog.at_level(logging.WARNING, logger="headwater"):
        cap = env.capture({"guardrail.collections.max": 1})
        try:
            wait_for(lambda: cap.runtime.metrics.snapshot_completed or cap.error,
                     what="snapshot")
        finally:
            cap.stop()
    assert _topics(env) == [
        f"{env.prefix}.public.{t}" for t in ("a", "b", "c")]
    assert any("guardrail.collections.max exceeded: 3" in r.getMessage() for r in caplog.records)
