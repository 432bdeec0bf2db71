"""`headwater serve`: many connectors and streams in one service, behind a REST API
compatible with Kafka Connect's (docs/server.md)."""
