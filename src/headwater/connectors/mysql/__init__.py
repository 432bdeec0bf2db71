"""MySQL / MariaDB connector: consistent snapshot, binlog streaming, GTIDs, schema history."""
