-- EMULATION of Db2's SQL Replication (ASN) capture surface on PostgreSQL (see __init__.py).
CREATE SCHEMA IF NOT EXISTS asncdc;
CREATE SCHEMA IF NOT EXISTS syscat;
CREATE SCHEMA IF NOT EXISTS sysibm;
CREATE SEQUENCE IF NOT EXISTS asncdc.commitseq_seq;

-- Db2 compares FOR BIT DATA values; PostgreSQL has no max/min over bytea: add them.
CREATE OR REPLACE FUNCTION asncdc.bytea_larger(a bytea, b bytea) RETURNS bytea
  LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN a IS NULL OR b > a THEN b ELSE a END $$;
CREATE OR REPLACE AGGREGATE public.max(bytea) (SFUNC = asncdc.bytea_larger, STYPE = bytea);
CREATE OR REPLACE FUNCTION asncdc.seq(n bigint) RETURNS bytea LANGUAGE sql IMMUTABLE AS
  $$ SELECT decode(lpad(to_hex(n), 20, '0'), 'hex') $$;

CREATE TABLE IF NOT EXISTS asncdc.ibmsnap_register (
  source_owner varchar(128) NOT NULL, source_table varchar(128) NOT NULL,
  source_view_qual smallint NOT NULL DEFAULT 0, global_record char(1) NOT NULL DEFAULT 'N',
  source_structure smallint NOT NULL DEFAULT 1, source_condensed char(1) DEFAULT 'Y',
  source_complete char(1) DEFAULT 'Y', cd_owner varchar(128), cd_table varchar(128),
  phys_change_owner varchar(128), phys_change_table varchar(128),
  cd_old_synchpoint bytea, cd_new_synchpoint bytea, disable_refresh smallint DEFAULT 0,
  synchpoint bytea, synchtime timestamp, arch_level char(4) DEFAULT '0801',
  before_img_prefix varchar(4), chg_upd_to_del_ins char(1) DEFAULT 'Y',
  chgonly char(1) DEFAULT 'N', recapture char(1) DEFAULT 'Y', state char(1) DEFAULT 'A');
CREATE TABLE IF NOT EXISTS asncdc.ibmsnap_pruncntl (
  target_server char(18) NOT NULL, target_owner varchar(128) NOT NULL,
  target_table varchar(128) NOT NULL, synchtime timestamp, synchpoint bytea,
  source_owner varchar(128) NOT NULL, source_table varchar(128) NOT NULL,
  source_view_qual smallint NOT NULL DEFAULT 0, apply_qual char(18) NOT NULL,
  set_name char(18) NOT NULL, cntl_server char(18) NOT NULL, target_structure smallint NOT NULL,
  cntl_alias char(8), phys_change_owner varchar(128), phys_change_table varchar(128),
  map_id varchar(10) NOT NULL);
-- The global record: its SYNCHPOINT is where Capture has got to.
INSERT INTO asncdc.ibmsnap_register (source_owner, source_table, global_record, synchpoint,
                                     synchtime)
  SELECT '', '', 'Y', asncdc.seq(0), now() AT TIME ZONE 'UTC'
  WHERE NOT EXISTS (SELECT 1 FROM asncdc.ibmsnap_register WHERE global_record = 'Y');

CREATE TABLE IF NOT EXISTS sysibm.sysdummy1 (ibmreqd char(1));
INSERT INTO sysibm.sysdummy1 SELECT 'Y' WHERE NOT EXISTS (SELECT 1 FROM sysibm.sysdummy1);

CREATE OR REPLACE VIEW syscat.tables AS
  SELECT upper(n.nspname) AS tabschema, upper(c.relname) AS tabname,
         2::smallint AS tbspaceid, (c.oid::bigint % 32768)::smallint AS tableid
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p');
CREATE OR REPLACE VIEW sysibm.systables AS
  SELECT tabschema AS creator, tabname AS name, tbspaceid AS dbid, tableid AS obid
  FROM syscat.tables;
CREATE OR REPLACE VIEW syscat.columns AS
  SELECT upper(c.table_schema) AS tabschema, upper(c.table_name) AS tabname,
         upper(c.column_name) AS colname, (c.ordinal_position - 1)::smallint AS colno,
         CASE c.is_nullable WHEN 'YES' THEN 'Y' ELSE 'N' END AS nulls,
         CASE c.data_type
           WHEN 'smallint' THEN 'SMALLINT' WHEN 'integer' THEN 'INTEGER'
           WHEN 'bigint' THEN 'BIGINT' WHEN 'real' THEN 'REAL'
           WHEN 'double precision' THEN 'DOUBLE' WHEN 'numeric' THEN 'DECIMAL'
           WHEN 'character' THEN 'CHARACTER' WHEN 'character varying' THEN 'VARCHAR'
           WHEN 'text' THEN 'CLOB' WHEN 'bytea' THEN 'VARBINARY' WHEN 'date' THEN 'DATE'
           WHEN 'time without time zone' THEN 'TIME'
           WHEN 'timestamp without time zone' THEN 'TIMESTAMP'
           WHEN 'boolean' THEN 'BOOLEAN' WHEN 'xml' THEN 'XML'
           ELSE upper(c.data_type) END AS typename,
         coalesce(c.character_maximum_length, c.numeric_precision, 0) AS length,
         (CASE WHEN c.data_type LIKE 'time%' THEN c.datetime_precision
               ELSE coalesce(c.numeric_scale, 0) END)::smallint AS scale,
         k.ordinal_position::smallint AS keyseq,
         CASE c.is_identity WHEN 'YES' THEN 'Y' ELSE 'N' END AS identity,
         CASE WHEN c.identity_generation = 'BY DEFAULT' THEN 'D'
              WHEN c.identity_generation = 'ALWAYS' OR c.is_generated = 'ALWAYS' THEN 'A'
              ELSE ' ' END AS generated
  FROM information_schema.columns c
  LEFT JOIN information_schema.table_constraints t
    ON t.table_schema = c.table_schema AND t.table_name = c.table_name
   AND t.constraint_type = 'PRIMARY KEY'
  LEFT JOIN information_schema.key_column_usage k
    ON k.constraint_name = t.constraint_name AND k.table_schema = t.table_schema
   AND k.table_name = c.table_name AND k.column_name = c.column_name;

-- The Capture program: a deferred row trigger runs at commit.  The first change of a
-- transaction takes a transaction-long lock and draws the transaction's IBMSNAP_COMMITSEQ, so
-- commit sequence order is commit order (a reader that sees the global SYNCHPOINT at n sees
-- every transaction up to n committed).  An update is written as a 'D' row (before image) and
-- an 'I' row (after image), as a CHG_UPD_TO_DEL_INS='Y' registration has Capture write it.
CREATE OR REPLACE FUNCTION asncdc.capture() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  seq bigint := nullif(current_setting('asncdc.tx_seq', true), '')::bigint;
  k int;
  cd text := TG_ARGV[0];
BEGIN
  IF seq IS NULL THEN
    PERFORM pg_advisory_xact_lock(7283012);
    seq := nextval('asncdc.commitseq_seq');
    PERFORM set_config('asncdc.tx_seq', seq::text, true);
    PERFORM set_config('asncdc.tx_k', '0', true);
    UPDATE asncdc.ibmsnap_register SET synchpoint = asncdc.seq(seq * 65536 + 65535),
      synchtime = clock_timestamp() AT TIME ZONE 'UTC' WHERE global_record = 'Y';
  END IF;
  k := current_setting('asncdc.tx_k')::int;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    k := k + 1;
    PERFORM asncdc.put(cd, to_jsonb(OLD) || jsonb_build_object(
      'ibmsnap_commitseq', '\x' || encode(asncdc.seq(seq * 65536 + 65535), 'hex'),
      'ibmsnap_intentseq', '\x' || encode(asncdc.seq(seq * 65536 + k), 'hex'),
      'ibmsnap_operation', 'D'));
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    k := k + 1;
    PERFORM asncdc.put(cd, to_jsonb(NEW) || jsonb_build_object(
      'ibmsnap_commitseq', '\x' || encode(asncdc.seq(seq * 65536 + 65535), 'hex'),
      'ibmsnap_intentseq', '\x' || encode(asncdc.seq(seq * 65536 + k), 'hex'),
      'ibmsnap_operation', 'I'));
  END IF;
  PERFORM set_config('asncdc.tx_k', k::text, true);
  RETURN NULL;
END $fn$;

CREATE OR REPLACE FUNCTION asncdc.put(cd text, row_ jsonb) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  EXECUTE format('INSERT INTO asncdc.%I SELECT * FROM jsonb_populate_record(NULL::asncdc.%I, $1)',
                 cd, cd) USING row_;
END $fn$;

-- ASNCDC.ADDTABLE of Debezium's Db2 setup: a CD table CDC_<SCHEMA>_<TABLE> (commit sequence,
-- intent sequence, operation, then the table's columns), the register and prune control rows,
-- and the capture trigger.  CD_NEW_SYNCHPOINT is a fresh sequence value: capture of the table
-- starts there.
CREATE OR REPLACE FUNCTION asncdc.addtable(tableschema text, tablename text) RETURNS text
  LANGUAGE plpgsql AS $fn$
DECLARE
  src_owner text := upper(tableschema);
  src_table text := upper(tablename);
  cd text := lower('CDC_' || tableschema || '_' || tablename);
  start bytea;
BEGIN
  PERFORM pg_advisory_xact_lock(7283012);
  start := asncdc.seq(nextval('asncdc.commitseq_seq') * 65536);
  EXECUTE format('CREATE TABLE asncdc.%I AS SELECT NULL::bytea AS ibmsnap_commitseq, '
    'NULL::bytea AS ibmsnap_intentseq, NULL::char(1) AS ibmsnap_operation, t.* '
    'FROM %I.%I t WITH NO DATA', cd, lower(tableschema), lower(tablename));
  INSERT INTO asncdc.ibmsnap_register (source_owner, source_table, cd_owner, cd_table,
      phys_change_owner, phys_change_table, cd_new_synchpoint)
    VALUES (src_owner, src_table, 'ASNCDC', upper(cd), 'ASNCDC', upper(cd), start);
  INSERT INTO asncdc.ibmsnap_pruncntl (target_server, target_owner, target_table,
      source_owner, source_table, apply_qual, set_name, cntl_server, target_structure,
      phys_change_owner, phys_change_table, map_id)
    VALUES ('KAFKA', src_owner, src_table, src_owner, src_table, 'KAFKAQUAL', 'SET001',
            current_database(), 8, 'ASNCDC', upper(cd),
            (SELECT coalesce(max(map_id::int), 0) + 1 FROM asncdc.ibmsnap_pruncntl)::text);
  EXECUTE format('CREATE CONSTRAINT TRIGGER asn_capture AFTER INSERT OR UPDATE OR DELETE '
    'ON %I.%I DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION asncdc.capture(%L)',
    lower(tableschema), lower(tablename), cd);
  RETURN upper(cd);
END $fn$;

-- ASNCDC.REMOVETABLE of Debezium's Db2 setup (asncdcaddremove.sql): the register and prune
-- control rows go, the CD table is dropped and capture stops (here: the trigger).  Debezium's
-- schema change procedure is REMOVETABLE, ALTER TABLE, ADDTABLE (a new CD_NEW_SYNCHPOINT).
CREATE OR REPLACE FUNCTION asncdc.removetable(tableschema text, tablename text) RETURNS void
  LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock(7283012);
  DELETE FROM asncdc.ibmsnap_pruncntl
    WHERE source_owner = upper(tableschema) AND source_table = upper(tablename);
  DELETE FROM asncdc.ibmsnap_register
    WHERE source_owner = upper(tableschema) AND source_table = upper(tablename);
  EXECUTE format('DROP TABLE asncdc.%I', lower('CDC_' || tableschema || '_' || tablename));
  EXECUTE format('DROP TRIGGER asn_capture ON %I.%I', lower(tableschema), lower(tablename));
END $fn$;
