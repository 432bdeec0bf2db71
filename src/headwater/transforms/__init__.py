"""Kafka Connect single message transforms (SMTs) and predicates, as Debezium users configure
them (`transforms=...`, `predicates=...`); see docs/transforms.md."""
