"""Kafka Connect's record model, for the structured output path (transforms and converters)."""
