"""The T-SQL the SQL Server connector issues, as Debezium's SqlServerConnection issues it.

`#db` is the bracketed database name; `?` a parameter (the connection adapts it to its
driver's parameter style).  Kept as text so the emulation translates exactly what a live
server would be sent.
"""

from __future__ import annotations

from typing import Final

GET_MAX_LSN: Final = "SELECT #db.sys.fn_cdc_get_max_lsn()"
GET_NTH_TRANSACTION_LSN_FROM_LAST: Final = (
    "SELECT MAX(start_lsn) FROM (SELECT TOP (?) start_lsn FROM #db.cdc.lsn_time_mapping "
    "WHERE start_lsn >= ? AND tran_id <> 0x00 ORDER BY start_lsn) as next_lsns")
GET_NTH_TRANSACTION_LSN_FROM_BEGINNING: Final = (
    "SELECT MAX(start_lsn) FROM (SELECT TOP (?) start_lsn FROM #db.cdc.lsn_time_mapping "
    "WHERE tran_id <> 0x00 ORDER BY start_lsn) as next_lsns")
GET_MIN_LSN_FROM_ALL_CHANGE_TABLES: Final = "SELECT MIN(start_lsn) FROM #db.cdc.change_tables"
INCREMENT_LSN: Final = "SELECT #db.sys.fn_cdc_increment_lsn(?)"
LSN_TIMESTAMP: Final = ("TODATETIMEOFFSET(#db.sys.fn_cdc_map_lsn_to_time([__$start_lsn]), "
                        "DATEPART(TZOFFSET, SYSDATETIMEOFFSET()))")
LSN_TIMESTAMP_JOIN: Final = ("TODATETIMEOFFSET(ltm.tran_begin_time, "
                             "DATEPART(TZOFFSET, SYSDATETIMEOFFSET()))")
CHANGES_FUNCTION: Final = (
    "SELECT [__$start_lsn], [__$seqval], [__$operation], [__$update_mask], #columns, "
    + LSN_TIMESTAMP + " FROM #db.cdc.[fn_cdc_get_all_changes_#ci](?, ?, N'all update old') "
    "ORDER BY [__$start_lsn] ASC, [__$seqval] ASC, [__$operation] ASC")
CHANGES_DIRECT: Final = (
    "SELECT cdc_data.[__$start_lsn], cdc_data.[__$seqval], cdc_data.[__$operation], "
    "cdc_data.[__$update_mask], #columns, " + LSN_TIMESTAMP_JOIN
    + " FROM #db.cdc.[#ci_CT] AS cdc_data LEFT JOIN #db.cdc.lsn_time_mapping ltm "
    "ON ltm.start_lsn = cdc_data.[__$start_lsn] "
    "WHERE cdc_data.[__$start_lsn] >= ? AND cdc_data.[__$start_lsn] <= ? "
    "ORDER BY cdc_data.[__$start_lsn] ASC, cdc_data.[__$command_id] ASC, "
    "cdc_data.[__$seqval] ASC, cdc_data.[__$operation] ASC")
GET_CHANGE_TABLES: Final = (
    "WITH ordered_change_tables AS (SELECT ROW_NUMBER() OVER (PARTITION BY "
    "ct.source_object_id, ct.start_lsn ORDER BY ct.create_date DESC) AS ct_sequence, ct.* "
    "FROM #db.cdc.change_tables AS ct) SELECT OBJECT_SCHEMA_NAME(source_object_id, DB_ID(?)), "
    "OBJECT_NAME(source_object_id, DB_ID(?)), capture_instance, object_id, start_lsn "
    "FROM ordered_change_tables WHERE ct_sequence = 1")
GET_CAPTURED_COLUMNS: Final = ("SELECT object_id, column_name FROM #db.cdc.captured_columns "
                               "ORDER BY object_id, column_id")
GET_COLUMNS: Final = (
    "SELECT c.TABLE_SCHEMA, c.TABLE_NAME, c.COLUMN_NAME, c.ORDINAL_POSITION, c.IS_NULLABLE, "
    "c.DATA_TYPE, c.CHARACTER_MAXIMUM_LENGTH, c.NUMERIC_PRECISION, c.NUMERIC_SCALE, "
    "c.DATETIME_PRECISION, c.COLUMN_DEFAULT FROM #db.INFORMATION_SCHEMA.COLUMNS c "
    "ORDER BY c.TABLE_SCHEMA, c.TABLE_NAME, c.ORDINAL_POSITION")
# The user tables (JDBC's getTables of type TABLE) and the identity and computed columns
# (getColumns' IS_AUTOINCREMENT / IS_GENERATEDCOLUMN), for the schema history's definitions.
GET_TABLES: Final = ("SELECT s.name, t.name FROM #db.sys.tables t "
                     "JOIN #db.sys.schemas s ON s.schema_id = t.schema_id")
GET_COLUMN_FLAGS: Final = (
    "SELECT s.name, t.name, c.name, c.is_identity, c.is_computed FROM #db.sys.columns c "
    "JOIN #db.sys.tables t ON t.object_id = c.object_id "
    "JOIN #db.sys.schemas s ON s.schema_id = t.schema_id")
GET_PRIMARY_KEYS: Final = (
    "SELECT k.TABLE_SCHEMA, k.TABLE_NAME, k.COLUMN_NAME "
    "FROM #db.INFORMATION_SCHEMA.TABLE_CONSTRAINTS t "
    "JOIN #db.INFORMATION_SCHEMA.KEY_COLUMN_USAGE k "
    "ON k.CONSTRAINT_NAME = t.CONSTRAINT_NAME AND k.TABLE_SCHEMA = t.TABLE_SCHEMA "
    "WHERE t.CONSTRAINT_TYPE = 'PRIMARY KEY' "
    "ORDER BY k.TABLE_SCHEMA, k.TABLE_NAME, k.ORDINAL_POSITION")
SELECT_TABLE: Final = "SELECT #columns FROM #db.[#schema].[#table]"
SELECT_TABLE_LOCKED: Final = "SELECT #columns FROM #db.[#schema].[#table] WITH (TABLOCKX)"
ISOLATION: Final = {
    "read_uncommitted": "SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED",
    "read_committed": "SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
    "repeatable_read": "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
    "snapshot": "SET TRANSACTION ISOLATION LEVEL SNAPSHOT",
    "exclusive": "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
}


def quote(name: str) -> str:
    """[name] with ] doubled, as SQL Server quotes identifiers."""
    return "[" + name.replace("]", "]]") + "]"


def with_db(sql: str, database: str) -> str:
    return sql.replace("#db", quote(database))
