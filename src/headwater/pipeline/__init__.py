"""The Spark pipeline: change topics into Delta Lake (or JDBC) tables.

Property-configured: `headwater pipeline CONFIG` (see docs/pipeline.md).  In Python, with the
vocabulary of Spark's AUTO CDC::

    from headwater.pipeline import create_auto_cdc_flow, start_flows, spark_session

    spark = spark_session()
    flows = [create_auto_cdc_flow(target="customers", source="dbserver1.inventory.customers",
                                  keys=["id"], stored_as_scd_type=2)]
    start_flows(spark, flows, topics_dir="data/topics", delta_path="data/delta",
                checkpoint_dir="data/checkpoints/flows", once=True).awaitTermination()

Imported lazily: Spark imports `headwater.pipeline.source` in the Python worker of every
streaming query, where the runner's imports (numba, pyarrow, deltalake) cost ~0.8 s of the
query's start-up for nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from headwater.pipeline.flows import AutoCdcFlow, create_auto_cdc_flow
    from headwater.pipeline.runner import spark_session, start, start_flows

__all__ = ["AutoCdcFlow", "create_auto_cdc_flow", "spark_session", "start", "start_flows"]

_HOMES = {"AutoCdcFlow": "flows", "create_auto_cdc_flow": "flows", "spark_session": "runner",
          "start": "runner", "start_flows": "runner"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'headwater.pipeline' has no attribute {name!r}")
    return getattr(importlib.import_module(f"headwater.pipeline.{home}"), name)
