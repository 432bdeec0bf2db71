"""The Db2 SQL the connector issues, as Debezium's Db2Connection and its platform adapters
(LuwPlatform, ZOsPlatform) issue it.

`#control` is `cdc.control.schema`, `#cd` is `cdc.change.tables.schema`, `#` (in the change
queries) the CD table name; `?` a parameter (ibm_db_dbi's qmark style).  Kept as text so the
emulation runs exactly what a live server would be sent.  The catalog queries read
SYSCAT.COLUMNS directly where Debezium asks JDBC's DatabaseMetaData (which reads the same
catalog); that is Headwater's, as is the SET CURRENT ISOLATION statement (Debezium sets the
JDBC isolation level: REPEATABLE_READ is Db2's RS, READ_COMMITTED CS, READ_UNCOMMITTED UR).
"""

from __future__ import annotations

from typing import Final

GET_DATABASE_NAME: Final = "SELECT CURRENT SERVER FROM SYSIBM.SYSDUMMY1"
LSN_TO_TIMESTAMP: Final = ("SELECT CURRENT TIMEstamp FROM sysibm.sysdummy1  WHERE ? > "
                           "X'00000000000000000000000000000000'")
LOCK_TABLE: Final = "SELECT * FROM # WHERE 0=1 WITH CS"  # ExclusiveSnapshotLock's statement

_MAX_LSN: Final = ("SELECT max(t.SYNCHPOINT) FROM ( SELECT CD_NEW_SYNCHPOINT AS SYNCHPOINT FROM "
                   "#control.IBMSNAP_REGISTER UNION ALL SELECT SYNCHPOINT AS SYNCHPOINT FROM "
                   "#control.IBMSNAP_REGISTER) t")
LUW_MAX_LSN: Final = _MAX_LSN
ZOS_MAX_LSN: Final = _MAX_LSN + " for read only with ur"

LUW_CHANGES: Final = (
    "SELECT CASE "
    "WHEN IBMSNAP_OPERATION = 'D' AND (LEAD(cdc.IBMSNAP_OPERATION,1,'X') OVER (PARTITION BY "
    "cdc.IBMSNAP_COMMITSEQ ORDER BY cdc.IBMSNAP_INTENTSEQ)) ='I' THEN 3 "
    "WHEN IBMSNAP_OPERATION = 'I' AND (LAG(cdc.IBMSNAP_OPERATION,1,'X') OVER (PARTITION BY "
    "cdc.IBMSNAP_COMMITSEQ ORDER BY cdc.IBMSNAP_INTENTSEQ)) ='D' THEN 4 "
    "WHEN IBMSNAP_OPERATION = 'D' THEN 1 WHEN IBMSNAP_OPERATION = 'I' THEN 2 END OPCODE,"
    "cdc.* FROM #cd.# cdc WHERE   IBMSNAP_COMMITSEQ >= ? AND IBMSNAP_COMMITSEQ <= ? "
    "order by IBMSNAP_COMMITSEQ, IBMSNAP_INTENTSEQ")
ZOS_CHANGES: Final = (
    "WITH tmp AS (SELECT cdc.IBMSNAP_OPERATION, cdc.IBMSNAP_COMMITSEQ, cdc.IBMSNAP_INTENTSEQ, "
    "ROW_NUMBER() OVER (PARTITION BY cdc.IBMSNAP_COMMITSEQ ORDER BY cdc.IBMSNAP_INTENTSEQ) rn "
    "FROM #cd.# cdc WHERE  cdc.IBMSNAP_COMMITSEQ >= ? AND cdc.IBMSNAP_COMMITSEQ <= ?  order by "
    "IBMSNAP_COMMITSEQ, IBMSNAP_INTENTSEQ),  tmp2 AS (SELECT  CASE  WHEN cdc.IBMSNAP_OPERATION "
    "= 'U' THEN 5 WHEN cdc.IBMSNAP_OPERATION = 'D' AND cdc2.IBMSNAP_OPERATION ='I' THEN 3  "
    "WHEN cdc.IBMSNAP_OPERATION = 'I' AND cdc2.IBMSNAP_OPERATION ='D' THEN 4  WHEN "
    "cdc.IBMSNAP_OPERATION = 'D' THEN 1  WHEN cdc.IBMSNAP_OPERATION = 'I' THEN 2  END  OPCODE, "
    " cdc.IBMSNAP_COMMITSEQ, cdc.IBMSNAP_INTENTSEQ, cdc.IBMSNAP_OPERATION  FROM tmp cdc left "
    "JOIN tmp cdc2  ON  cdc.IBMSNAP_COMMITSEQ = cdc2.IBMSNAP_COMMITSEQ AND  "
    "((cdc.IBMSNAP_OPERATION = 'D' AND cdc.rn = cdc2.rn - 1)   OR (cdc.IBMSNAP_OPERATION = 'I' "
    "AND cdc.rn = cdc2.rn + 1)))  select res.OPCODE, cdc.* from #cd.# cdc inner join tmp2 res "
    "on cdc.IBMSNAP_COMMITSEQ=res.IBMSNAP_COMMITSEQ and "
    "cdc.IBMSNAP_INTENTSEQ=res.IBMSNAP_INTENTSEQ order by IBMSNAP_COMMITSEQ, IBMSNAP_INTENTSEQ")

LUW_CHANGE_TABLES: Final = (
    "select r.SOURCE_OWNER, r.SOURCE_TABLE, r.CD_OWNER, r.CD_TABLE, r.CD_NEW_SYNCHPOINT, "
    "r.CD_OLD_SYNCHPOINT, t.TBSPACEID, t.TABLEID , CAST((t.TBSPACEID * 65536 +  t.TABLEID )AS "
    "INTEGER )from #control.IBMSNAP_REGISTER r left JOIN SYSCAT.TABLES t ON r.SOURCE_OWNER  = "
    "t.TABSCHEMA AND r.SOURCE_TABLE = t.TABNAME  WHERE r.SOURCE_OWNER <> ''")
ZOS_CHANGE_TABLES: Final = (
    "select r.SOURCE_OWNER, r.SOURCE_TABLE, r.CD_OWNER, r.CD_TABLE, r.CD_NEW_SYNCHPOINT, "
    "r.CD_OLD_SYNCHPOINT, t.DBID, t.OBID , CAST((t.DBID * 65536 +  t.OBID )AS INTEGER )from "
    "#control.IBMSNAP_REGISTER r left JOIN SYSIBM.SYSTABLES t ON r.SOURCE_OWNER  = t.CREATOR "
    "AND r.SOURCE_TABLE = t.NAME  WHERE r.SOURCE_OWNER <> '' for read only with ur")

GET_COLUMNS: Final = (
    "SELECT TABSCHEMA, TABNAME, COLNAME, COLNO, NULLS, TYPENAME, LENGTH, SCALE, KEYSEQ, "
    "IDENTITY, GENERATED FROM SYSCAT.COLUMNS WHERE TABSCHEMA = ? AND TABNAME = ? "
    "ORDER BY COLNO")
SELECT_TABLE: Final = "SELECT #columns FROM #table"  # SelectAllSnapshotQuery
ISOLATION: Final = {
    "read_uncommitted": "SET CURRENT ISOLATION = UR",
    "read_committed": "SET CURRENT ISOLATION = CS",
    "repeatable_read": "SET CURRENT ISOLATION = RS",
    "exclusive": "SET CURRENT ISOLATION = RS",
}


def quote(name: str) -> str:
    """Db2ObjectNameQuoter.quoteNameIfNecessary: double quotes only around a name with a
    lower-case letter (Db2 folds unquoted names to upper case)."""
    if any(c.islower() for c in name):
        return '"' + name.replace('"', '""') + '"'
    return name


def table_name(schema: str, table: str) -> str:
    return f"{quote(schema)}.{quote(table)}"


def for_platform(platform: str) -> tuple[str, str, str]:
    """(max LSN, change tables, changes) queries of `db2.platform`."""
    if platform == "zos":
        return ZOS_MAX_LSN, ZOS_CHANGE_TABLES, ZOS_CHANGES
    return LUW_MAX_LSN, LUW_CHANGE_TABLES, LUW_CHANGES


def with_schemas(sql: str, control: str, change_tables: str) -> str:
    return sql.replace("#control", control).replace("#cd", change_tables)
