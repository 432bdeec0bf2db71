"""`guardrail.collections.max` on MariaDB: while the schema history keeps every table of the
captured databases (`schema.history.internal.store.only.captured.tables.ddl=false`, the
default), those are what is counted, as in Debezium 3.x's GuardrailValidator."""

from __future__ import annotations

import pytest

from headwater.config.connector_common import GuardrailLimitExceeded
from tests.integration.postgres.conftest import wait_for

from .conftest import MariaEnv

pytestmark = pytest.mark.integration


def test_the_history_s_tables_count_unless_it_keeps_only_the_captured(menv: MariaEnv) -> None:
    for name in ("a", "b", "c"):
        menv.sql(f"CREATE TABLE {name} (id int PRIMARY KEY)")
    limit = {"guardrail.collections.max": 2, "guardrail.collections.limit.action": "fail",
             "table.include.list": f"{menv.db}.a"}
    cap = menv.capture(limit)
    wait_for(lambda: cap.error is not None, what="the start to fail")
    with pytest.raises(GuardrailLimitExceeded,
                       match=r"3 tables/collections .*store\.only\.captured\.tables\.ddl=false"):
        cap.stop()
    cap = menv.capture({**limit,
                        "schema.history.internal.store.only.captured.tables.ddl": "true"})
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed or cap.error, what="snapshot")
    finally:
        cap.stop()
