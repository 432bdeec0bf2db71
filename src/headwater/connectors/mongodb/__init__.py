"""MongoDB change data capture: Debezium-compatible events from change streams."""
