-- EMULATION of Db2's SQL Replication (ASN) capture surface on PostgreSQL (see __init__.py).
-- Every object the connector reads has its Db2 catalog name as its PostgreSQL name, quoted:
-- Db2 folds unquoted names to upper case, so ASNCDC.IBMSNAP_REGISTER is "ASNCDC"."IBMSNAP_
-- REGISTER" here, and the DB-API adapter folds the connector's unquoted names the same way.
-- The emulation's own helpers (lower-case names) are PostgreSQL's, never read by the connector.
CREATE SCHEMA IF NOT EXISTS "ASNCDC";
CREATE SCHEMA IF NOT EXISTS "SYSCAT";
CREATE SCHEMA IF NOT EXISTS "SYSIBM";
CREATE SEQUENCE IF NOT EXISTS "ASNCDC".commitseq_seq;

-- Db2 compares FOR BIT DATA values; PostgreSQL has no max/min over bytea: add them.
CREATE OR REPLACE FUNCTION "ASNCDC".bytea_larger(a bytea, b bytea) RETURNS bytea
  LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN a IS NULL OR b > a THEN b ELSE a END $$;
CREATE OR REPLACE AGGREGATE public.max(bytea) (SFUNC = "ASNCDC".bytea_larger, STYPE = bytea);
CREATE OR REPLACE FUNCTION "ASNCDC".seq(n bigint) RETURNS bytea LANGUAGE sql IMMUTABLE AS
  $$ SELECT decode(lpad(to_hex(n), 20, '0'), 'hex') $$;

CREATE TABLE IF NOT EXISTS "ASNCDC"."IBMSNAP_REGISTER" (
  "SOURCE_OWNER" varchar(128) NOT NULL, "SOURCE_TABLE" varchar(128) NOT NULL,
  "SOURCE_VIEW_QUAL" smallint NOT NULL DEFAULT 0, "GLOBAL_RECORD" char(1) NOT NULL DEFAULT 'N',
  "SOURCE_STRUCTURE" smallint NOT NULL DEFAULT 1, "SOURCE_CONDENSED" char(1) DEFAULT 'Y',
  "SOURCE_COMPLETE" char(1) DEFAULT 'Y', "CD_OWNER" varchar(128), "CD_TABLE" varchar(128),
  "PHYS_CHANGE_OWNER" varchar(128), "PHYS_CHANGE_TABLE" varchar(128),
  "CD_OLD_SYNCHPOINT" bytea, "CD_NEW_SYNCHPOINT" bytea, "DISABLE_REFRESH" smallint DEFAULT 0,
  "SYNCHPOINT" bytea, "SYNCHTIME" timestamp, "ARCH_LEVEL" char(4) DEFAULT '0801',
  "BEFORE_IMG_PREFIX" varchar(4), "CHG_UPD_TO_DEL_INS" char(1) DEFAULT 'Y',
  "CHGONLY" char(1) DEFAULT 'N', "RECAPTURE" char(1) DEFAULT 'Y', "STATE" char(1) DEFAULT 'A');
CREATE TABLE IF NOT EXISTS "ASNCDC"."IBMSNAP_PRUNCNTL" (
  "TARGET_SERVER" char(18) NOT NULL, "TARGET_OWNER" varchar(128) NOT NULL,
  "TARGET_TABLE" varchar(128) NOT NULL, "SYNCHTIME" timestamp, "SYNCHPOINT" bytea,
  "SOURCE_OWNER" varchar(128) NOT NULL, "SOURCE_TABLE" varchar(128) NOT NULL,
  "SOURCE_VIEW_QUAL" smallint NOT NULL DEFAULT 0, "APPLY_QUAL" char(18) NOT NULL,
  "SET_NAME" char(18) NOT NULL, "CNTL_SERVER" char(18) NOT NULL,
  "TARGET_STRUCTURE" smallint NOT NULL, "CNTL_ALIAS" char(8), "PHYS_CHANGE_OWNER" varchar(128),
  "PHYS_CHANGE_TABLE" varchar(128), "MAP_ID" varchar(10) NOT NULL);
-- The global record: its SYNCHPOINT is where Capture has got to.
INSERT INTO "ASNCDC"."IBMSNAP_REGISTER" ("SOURCE_OWNER", "SOURCE_TABLE", "GLOBAL_RECORD",
                                         "SYNCHPOINT", "SYNCHTIME")
  SELECT '', '', 'Y', "ASNCDC".seq(0), now() AT TIME ZONE 'UTC'
  WHERE NOT EXISTS (SELECT 1 FROM "ASNCDC"."IBMSNAP_REGISTER" WHERE "GLOBAL_RECORD" = 'Y');

CREATE TABLE IF NOT EXISTS "SYSIBM"."SYSDUMMY1" ("IBMREQD" char(1));
INSERT INTO "SYSIBM"."SYSDUMMY1" SELECT 'Y' WHERE NOT EXISTS (SELECT 1 FROM "SYSIBM"."SYSDUMMY1");

-- The catalog: names exactly as stored (the emulation's PostgreSQL names are Db2's names).
CREATE OR REPLACE VIEW "SYSCAT"."TABLES" AS
  SELECT n.nspname::varchar(128) AS "TABSCHEMA", c.relname::varchar(128) AS "TABNAME",
         2::smallint AS "TBSPACEID", (c.oid::bigint % 32768)::smallint AS "TABLEID"
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
    AND n.nspname NOT LIKE 'pg\_toast%';
CREATE OR REPLACE VIEW "SYSIBM"."SYSTABLES" AS
  SELECT "TABSCHEMA" AS "CREATOR", "TABNAME" AS "NAME", "TBSPACEID" AS "DBID",
         "TABLEID" AS "OBID"
  FROM "SYSCAT"."TABLES";
-- Column types by their Db2 names.  A PostgreSQL numeric without precision is DECFLOAT(34)
-- (LENGTH 16: Db2's arbitrary-scale decimal); TIME has no fractional seconds in Db2 (a TIME
-- column of the emulation is time(0)).
CREATE OR REPLACE VIEW "SYSCAT"."COLUMNS" AS
  SELECT c.table_schema::varchar(128) AS "TABSCHEMA", c.table_name::varchar(128) AS "TABNAME",
         c.column_name::varchar(128) AS "COLNAME", (c.ordinal_position - 1)::smallint AS "COLNO",
         CASE c.is_nullable WHEN 'YES' THEN 'Y' ELSE 'N' END AS "NULLS",
         CASE
           WHEN c.data_type = 'numeric' AND c.numeric_precision IS NULL THEN 'DECFLOAT'
           WHEN c.data_type = 'smallint' THEN 'SMALLINT' WHEN c.data_type = 'integer' THEN 'INTEGER'
           WHEN c.data_type = 'bigint' THEN 'BIGINT' WHEN c.data_type = 'real' THEN 'REAL'
           WHEN c.data_type = 'double precision' THEN 'DOUBLE'
           WHEN c.data_type = 'numeric' THEN 'DECIMAL'
           WHEN c.data_type = 'character' THEN 'CHARACTER'
           WHEN c.data_type = 'character varying' THEN 'VARCHAR'
           WHEN c.data_type = 'text' THEN 'CLOB' WHEN c.data_type = 'bytea' THEN 'VARBINARY'
           WHEN c.data_type = 'date' THEN 'DATE'
           WHEN c.data_type = 'time without time zone' THEN 'TIME'
           WHEN c.data_type = 'timestamp without time zone' THEN 'TIMESTAMP'
           WHEN c.data_type = 'boolean' THEN 'BOOLEAN' WHEN c.data_type = 'xml' THEN 'XML'
           ELSE upper(c.data_type) END::varchar(128) AS "TYPENAME",
         (CASE WHEN c.data_type = 'numeric' AND c.numeric_precision IS NULL THEN 16
               ELSE coalesce(c.character_maximum_length, c.numeric_precision, 0) END)::integer
           AS "LENGTH",
         (CASE WHEN c.data_type LIKE 'time%' THEN c.datetime_precision
               ELSE coalesce(c.numeric_scale, 0) END)::smallint AS "SCALE",
         k.ordinal_position::smallint AS "KEYSEQ",
         CASE c.is_identity WHEN 'YES' THEN 'Y' ELSE 'N' END AS "IDENTITY",
         CASE WHEN c.identity_generation = 'BY DEFAULT' THEN 'D'
              WHEN c.identity_generation = 'ALWAYS' OR c.is_generated = 'ALWAYS' THEN 'A'
              ELSE ' ' END AS "GENERATED"
  FROM information_schema.columns c
  LEFT JOIN information_schema.table_constraints t
    ON t.table_schema = c.table_schema AND t.table_name = c.table_name
   AND t.constraint_type = 'PRIMARY KEY'
  LEFT JOIN information_schema.key_column_usage k
    ON k.constraint_name = t.constraint_name AND k.table_schema = t.table_schema
   AND k.table_name = c.table_name AND k.column_name = c.column_name
  WHERE c.table_schema NOT IN ('pg_catalog', 'information_schema');

-- The Capture program: a deferred row trigger runs at commit.  The first change of a
-- transaction takes a transaction-long lock and draws the transaction's IBMSNAP_COMMITSEQ, so
-- commit sequence order is commit order (a reader that sees the global SYNCHPOINT at n sees
-- every transaction up to n committed).  An update is written as a 'D' row (before image) and
-- an 'I' row (after image), as a CHG_UPD_TO_DEL_INS='Y' registration has Capture write it.
-- TRUNCATE fires no row trigger: like SQL Replication, the emulation writes no CD row for it.
CREATE OR REPLACE FUNCTION "ASNCDC".capture() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  seq bigint := nullif(current_setting('asncdc.tx_seq', true), '')::bigint;
  k int;
  cd text := TG_ARGV[0];
BEGIN
  IF seq IS NULL THEN
    PERFORM pg_advisory_xact_lock(7283012);
    seq := nextval('"ASNCDC".commitseq_seq');
    PERFORM set_config('asncdc.tx_seq', seq::text, true);
    PERFORM set_config('asncdc.tx_k', '0', true);
    UPDATE "ASNCDC"."IBMSNAP_REGISTER" SET "SYNCHPOINT" = "ASNCDC".seq(seq * 65536 + 65535),
      "SYNCHTIME" = clock_timestamp() AT TIME ZONE 'UTC' WHERE "GLOBAL_RECORD" = 'Y';
  END IF;
  k := current_setting('asncdc.tx_k')::int;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    k := k + 1;
    PERFORM "ASNCDC".put(cd, to_jsonb(OLD) || jsonb_build_object(
      'IBMSNAP_COMMITSEQ', '\x' || encode("ASNCDC".seq(seq * 65536 + 65535), 'hex'),
      'IBMSNAP_INTENTSEQ', '\x' || encode("ASNCDC".seq(seq * 65536 + k), 'hex'),
      'IBMSNAP_OPERATION', 'D'));
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    k := k + 1;
    PERFORM "ASNCDC".put(cd, to_jsonb(NEW) || jsonb_build_object(
      'IBMSNAP_COMMITSEQ', '\x' || encode("ASNCDC".seq(seq * 65536 + 65535), 'hex'),
      'IBMSNAP_INTENTSEQ', '\x' || encode("ASNCDC".seq(seq * 65536 + k), 'hex'),
      'IBMSNAP_OPERATION', 'I'));
  END IF;
  PERFORM set_config('asncdc.tx_k', k::text, true);
  RETURN NULL;
END $fn$;

CREATE OR REPLACE FUNCTION "ASNCDC".put(cd text, row_ jsonb) RETURNS void
  LANGUAGE plpgsql AS $fn$
BEGIN
  EXECUTE format('INSERT INTO "ASNCDC".%I SELECT * FROM jsonb_populate_record('
                 'NULL::"ASNCDC".%I, $1)', cd, cd) USING row_;
END $fn$;

-- ASNCDC.ADDTABLE of Debezium's Db2 setup (names as the catalog holds them): a CD table
-- CDC_<schema>_<table> (commit sequence, intent sequence, operation, then the table's
-- columns), the register and prune control rows, and the capture trigger.
-- CD_NEW_SYNCHPOINT is a fresh sequence value: capture of the table starts there.
CREATE OR REPLACE FUNCTION "ASNCDC"."ADDTABLE"(tableschema text, tablename text) RETURNS text
  LANGUAGE plpgsql AS $fn$
DECLARE
  cd text := 'CDC_' || tableschema || '_' || tablename;
  start bytea;
BEGIN
  PERFORM pg_advisory_xact_lock(7283012);
  start := "ASNCDC".seq(nextval('"ASNCDC".commitseq_seq') * 65536);
  EXECUTE format('CREATE TABLE "ASNCDC".%I AS SELECT NULL::bytea AS "IBMSNAP_COMMITSEQ", '
    'NULL::bytea AS "IBMSNAP_INTENTSEQ", NULL::char(1) AS "IBMSNAP_OPERATION", t.* '
    'FROM %I.%I t WITH NO DATA', cd, tableschema, tablename);
  INSERT INTO "ASNCDC"."IBMSNAP_REGISTER" ("SOURCE_OWNER", "SOURCE_TABLE", "CD_OWNER",
      "CD_TABLE", "PHYS_CHANGE_OWNER", "PHYS_CHANGE_TABLE", "CD_NEW_SYNCHPOINT")
    VALUES (tableschema, tablename, 'ASNCDC', cd, 'ASNCDC', cd, start);
  INSERT INTO "ASNCDC"."IBMSNAP_PRUNCNTL" ("TARGET_SERVER", "TARGET_OWNER", "TARGET_TABLE",
      "SOURCE_OWNER", "SOURCE_TABLE", "APPLY_QUAL", "SET_NAME", "CNTL_SERVER",
      "TARGET_STRUCTURE", "PHYS_CHANGE_OWNER", "PHYS_CHANGE_TABLE", "MAP_ID")
    VALUES ('KAFKA', tableschema, tablename, tableschema, tablename, 'KAFKAQUAL', 'SET001',
            current_database(), 8, 'ASNCDC', cd,
            (SELECT coalesce(max("MAP_ID"::int), 0) + 1
             FROM "ASNCDC"."IBMSNAP_PRUNCNTL")::text);
  EXECUTE format('CREATE CONSTRAINT TRIGGER asn_capture AFTER INSERT OR UPDATE OR DELETE '
    'ON %I.%I DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "ASNCDC".capture(%L)',
    tableschema, tablename, cd);
  RETURN cd;
END $fn$;

-- ASNCDC.REMOVETABLE of Debezium's Db2 setup (asncdcaddremove.sql): the register and prune
-- control rows go, the CD table is dropped and capture stops (here: the trigger).  Debezium's
-- schema change procedure is REMOVETABLE, ALTER TABLE, ADDTABLE (a new CD_NEW_SYNCHPOINT).
CREATE OR REPLACE FUNCTION "ASNCDC"."REMOVETABLE"(tableschema text, tablename text)
  RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock(7283012);
  DELETE FROM "ASNCDC"."IBMSNAP_PRUNCNTL"
    WHERE "SOURCE_OWNER" = tableschema AND "SOURCE_TABLE" = tablename;
  DELETE FROM "ASNCDC"."IBMSNAP_REGISTER"
    WHERE "SOURCE_OWNER" = tableschema AND "SOURCE_TABLE" = tablename;
  EXECUTE format('DROP TABLE "ASNCDC".%I', 'CDC_' || tableschema || '_' || tablename);
  EXECUTE format('DROP TRIGGER asn_capture ON %I.%I', tableschema, tablename);
END $fn$;
