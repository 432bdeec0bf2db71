"""The MariaDB/MySQL binlog reader: sans-IO event parsing (`events`), row image decoding
(`rows`), GTIDs (`gtid`) and the replication client that owns the socket (`client`).

The split mirrors `headwater.connectors.postgres.pgoutput`: everything that turns bytes into
values is pure and tested from captured byte fixtures; only `client` does I/O.
"""
