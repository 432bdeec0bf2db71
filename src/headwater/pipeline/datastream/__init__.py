"""Datastream events (docs/datastream.md) into the pipeline's modes and targets (Delta,
Iceberg, JDBC): from the topic log, Kafka or the files destination's directory."""
