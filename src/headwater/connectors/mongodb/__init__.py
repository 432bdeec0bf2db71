"""MongoDB connector: Debezium's MongoDB change events (change streams, snapshot)."""
