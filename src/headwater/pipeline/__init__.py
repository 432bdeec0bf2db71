"""The Spark pipeline: change topics into Delta Lake (or JDBC) tables.

Property-configured: `headwater pipeline CONFIG` (see docs/pipeline.md).  In Python, with the
vocabulary of Spark's AUTO CDC::

    from headwater.pipeline import create_auto_cdc_flow, start_flows, spark_session

    spark = spark_session()
    flows = [create_auto_cdc_flow(target="customers", source="dbserver1.inventory.customers",
                                  keys=["id"], stored_as_scd_type=2)]
    start_flows(spark, flows, topics_dir="data/topics", delta_path="data/delta",
                checkpoint_dir="data/checkpoints/flows", once=True).awaitTermination()
"""

from headwater.pipeline.flows import AutoCdcFlow, create_auto_cdc_flow
from headwater.pipeline.runner import spark_session, start, start_flows

__all__ = ["AutoCdcFlow", "create_auto_cdc_flow", "spark_session", "start", "start_flows"]
