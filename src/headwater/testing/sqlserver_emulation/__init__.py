"""An EMULATION of SQL Server's CDC surface on PostgreSQL, for tests only.

Neither SQL Server nor Db2 can run here, so the SQL Server connector is tested against a real
PostgreSQL (headwater.testing.localpg) that reproduces what the connector reads: schema `cdc`
(change_tables, captured_columns, lsn_time_mapping, `<ci>_CT` tables filled by deferred
triggers at commit, 10-byte LSNs increasing per transaction in commit order), the `sys.fn_cdc_*`
functions and `cdc.fn_cdc_get_all_changes_<ci>`.  The connector's T-SQL is translated by
sqlglot (read='tsql', write='postgres') behind a pymssql-shaped DB-API adapter (`dbapi`), with
hand-written fixes where sqlglot cannot translate (translate.py lists them).

It is an emulation: a pass here says the connector is right about the CDC surface as the
emulation reproduces it, not that it works against a live SQL Server.
"""
