"""An EMULATION of Db2's SQL Replication (ASN) capture surface on PostgreSQL, for tests only.

Db2 cannot run here, so the Db2 connector is tested against a real PostgreSQL
(headwater.testing.localpg) that reproduces what the connector reads: schema ASNCDC with
IBMSNAP_REGISTER (one global record whose SYNCHPOINT is the capture position, one row per
registered table with its CD table and CD_NEW_SYNCHPOINT) and IBMSNAP_PRUNCNTL, CD tables
filled by deferred triggers at commit with IBMSNAP_COMMITSEQ (10 bytes, increasing per
transaction in commit order), IBMSNAP_INTENTSEQ (increasing inside it) and IBMSNAP_OPERATION
('I', 'D'; an update is a 'D' then an 'I' row, as CHG_UPD_TO_DEL_INS='Y' registrations write
it), plus the catalog views the connector reads (SYSCAT.TABLES, SYSCAT.COLUMNS with Db2 type
names, SYSIBM.SYSTABLES, SYSIBM.SYSDUMMY1).  Every object's PostgreSQL name is its Db2
catalog name, and Db2's folding of unquoted names to upper case is applied to each statement
(names.fold), so unquoted, quoted and mixed-case names mean what they mean on Db2.

sqlglot has no Db2 dialect, so the connector's few Db2 statements are translated by hand
(dbapi.translate: parameter markers, X'..' literals, CURRENT TIMESTAMP/SERVER, CONCAT,
isolation clauses and statements, then the name folding); the rest of its SQL is valid
PostgreSQL as it stands.

It is an emulation: a pass here says the connector is right about the ASN surface as the
emulation reproduces it, not that it works against a live Db2.
"""
