"""The MongoDB connector: change streams into Debezium MongoDB events."""
