"""Kafka Connect converters: Connect schema + value to the bytes written to the topic log."""
