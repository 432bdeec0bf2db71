"""The Db2 emulation's name folding: unquoted names become their quoted upper-case form (as
Db2 reads them), quoted names, string literals and SQL words pass unchanged."""

from __future__ import annotations

import pytest

from headwater.testing.db2_emulation.dbapi import translate
from headwater.testing.db2_emulation.names import fold


@pytest.mark.parametrize(("db2", "postgres"), [
    ("SELECT id FROM db2inst1.customers", 'SELECT "ID" FROM "DB2INST1"."CUSTOMERS"'),
    ('SELECT "id" FROM "testSchema"."tablea"', 'SELECT "id" FROM "testSchema"."tablea"'),
    ("SELECT a FROM t WHERE b = 'it''s x' AND c = \"we\"\"ird\"",
     'SELECT "A" FROM "T" WHERE "B" = \'it\'\'s x\' AND "C" = "we""ird"'),
    ("select max(t.SYNCHPOINT) from ASNCDC.IBMSNAP_REGISTER t",
     'select max("T"."SYNCHPOINT") from "ASNCDC"."IBMSNAP_REGISTER" "T"'),
    ("CREATE TABLE s.t (x DECIMAL(10,2) NOT NULL, y TIMESTAMP(3))",
     'CREATE TABLE "S"."T" ("X" DECIMAL(10,2) NOT NULL, "Y" TIMESTAMP(3))'),
])
def test_unquoted_names_fold_to_upper_case(db2: str, postgres: str) -> None:
    assert fold(db2) == postgres


def test_the_connectors_statements_translate_whole() -> None:
    """The hand rewrites first (CURRENT TIMESTAMP, X'..', trailing isolation clauses), then
    the folding, then the parameter markers."""
    assert translate("SELECT CURRENT TIMESTAMP FROM sysibm.sysdummy1 WHERE ? > X'00ff' "
                     "FOR READ ONLY WITH UR") == (
        "SELECT CURRENT_TIMESTAMP FROM \"SYSIBM\".\"SYSDUMMY1\" WHERE %s > '\\x00ff'::bytea")
    assert translate("SAVEPOINT s1 ON ROLLBACK RETAIN CURSORS") == 'SAVEPOINT "S1"'
    assert translate("SET CURRENT ISOLATION = RS") == (
        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
