"""Kafka as Headwater's topic store, offset store, schema history and signal channel, spoken
only through confluent-kafka so that the same code runs against any Kafka-protocol cluster
(docs/kafka.md)."""
