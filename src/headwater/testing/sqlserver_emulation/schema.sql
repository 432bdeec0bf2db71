-- EMULATION of SQL Server's CDC surface on PostgreSQL (see __init__.py).
CREATE SCHEMA IF NOT EXISTS cdc;
CREATE SCHEMA IF NOT EXISTS sys;
CREATE SCHEMA IF NOT EXISTS dbo;
CREATE SCHEMA IF NOT EXISTS emu;
CREATE SEQUENCE IF NOT EXISTS cdc.lsn_seq;

CREATE TABLE IF NOT EXISTS cdc.lsn_time_mapping (
  start_lsn bytea PRIMARY KEY, tran_begin_time timestamp, tran_end_time timestamp,
  tran_id bytea, tran_begin_lsn bytea);
CREATE TABLE IF NOT EXISTS cdc.change_tables (
  object_id serial PRIMARY KEY, version int DEFAULT 0, source_object_id oid,
  capture_instance text UNIQUE, start_lsn bytea, end_lsn bytea,
  supports_net_changes boolean DEFAULT false, has_drop_pending boolean,
  role_name text, index_name text, filegroup_name text,
  create_date timestamp DEFAULT clock_timestamp(), partition_switch boolean DEFAULT false);
CREATE TABLE IF NOT EXISTS cdc.captured_columns (
  object_id int, column_name text, column_id int, column_type text, column_ordinal int,
  is_computed boolean DEFAULT false);
-- The T-SQL types columns were declared with (PostgreSQL's catalog knows only its own).
CREATE TABLE IF NOT EXISTS emu.declared_types (
  table_schema text, table_name text, column_name text, data_type text,
  numeric_precision int, numeric_scale int, datetime_precision int,
  PRIMARY KEY (table_schema, table_name, column_name));
CREATE OR REPLACE VIEW emu.tsql_columns AS
  SELECT c.table_catalog, c.table_schema, c.table_name, c.column_name, c.ordinal_position,
         c.is_nullable, coalesce(d.data_type, c.data_type) AS data_type,
         -- SQL Server's lengths: (max) types say -1; binary(n)/varbinary(n) (bytea here) n
         CASE WHEN c.character_maximum_length IS NOT NULL THEN c.character_maximum_length
              WHEN d.data_type IN ('binary', 'varbinary') AND d.numeric_precision IS NOT NULL
                THEN d.numeric_precision
              WHEN d.data_type IN ('varchar', 'nvarchar', 'varbinary') THEN -1
         END AS character_maximum_length,
         coalesce(d.numeric_precision, c.numeric_precision) AS numeric_precision,
         coalesce(d.numeric_scale, c.numeric_scale) AS numeric_scale,
         coalesce(d.datetime_precision, c.datetime_precision) AS datetime_precision,
         c.column_default
  FROM information_schema.columns c
  LEFT JOIN emu.declared_types d USING (table_schema, table_name, column_name)
  WHERE c.table_schema NOT IN ('pg_catalog', 'information_schema', 'cdc', 'sys', 'emu');

-- SQL Server compares binary values; PostgreSQL has no max/min over bytea: add them.
CREATE OR REPLACE FUNCTION cdc.bytea_larger(a bytea, b bytea) RETURNS bytea
  LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN a IS NULL OR b > a THEN b ELSE a END $$;
CREATE OR REPLACE FUNCTION cdc.bytea_smaller(a bytea, b bytea) RETURNS bytea
  LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN a IS NULL OR b < a THEN b ELSE a END $$;
CREATE OR REPLACE AGGREGATE public.max(bytea) (SFUNC = cdc.bytea_larger, STYPE = bytea);
CREATE OR REPLACE AGGREGATE public.min(bytea) (SFUNC = cdc.bytea_smaller, STYPE = bytea);
CREATE OR REPLACE FUNCTION cdc.lsn(n bigint) RETURNS bytea LANGUAGE sql IMMUTABLE AS
  $$ SELECT decode(lpad(to_hex(n), 20, '0'), 'hex') $$;
CREATE OR REPLACE FUNCTION cdc.lsn_int(x bytea) RETURNS bigint LANGUAGE sql IMMUTABLE AS
  $$ SELECT ('x' || encode(substring(x FROM 3 FOR 8), 'hex'))::bit(64)::bigint $$;
CREATE OR REPLACE FUNCTION sys.fn_cdc_get_max_lsn() RETURNS bytea LANGUAGE sql STABLE AS
  $$ SELECT coalesce(max(start_lsn), cdc.lsn(0)) FROM cdc.lsn_time_mapping $$;
CREATE OR REPLACE FUNCTION sys.fn_cdc_get_min_lsn(ci text) RETURNS bytea LANGUAGE sql STABLE AS
  $$ SELECT coalesce((SELECT start_lsn FROM cdc.change_tables WHERE capture_instance = ci),
                     cdc.lsn(0)) $$;
CREATE OR REPLACE FUNCTION sys.fn_cdc_increment_lsn(x bytea) RETURNS bytea
  LANGUAGE sql IMMUTABLE AS $$ SELECT cdc.lsn(cdc.lsn_int(x) + 1) $$;
CREATE OR REPLACE FUNCTION sys.fn_cdc_map_lsn_to_time(x bytea) RETURNS timestamptz
  LANGUAGE sql STABLE AS
  $$ SELECT tran_end_time AT TIME ZONE 'UTC' FROM cdc.lsn_time_mapping WHERE start_lsn = x $$;
CREATE OR REPLACE FUNCTION public.db_id(name text) RETURNS int LANGUAGE sql IMMUTABLE AS
  $$ SELECT 1 $$;
CREATE OR REPLACE FUNCTION public.object_schema_name(id oid, db int) RETURNS text
  LANGUAGE sql STABLE AS
  $$ SELECT n.nspname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.oid = id $$;
CREATE OR REPLACE FUNCTION public.object_name(id oid, db int) RETURNS text
  LANGUAGE sql STABLE AS $$ SELECT relname::text FROM pg_class WHERE oid = id $$;

-- The capture job: a deferred row trigger runs at commit.  The first change of a transaction
-- takes a transaction-long lock and draws the transaction's LSN block, so LSN order is commit
-- order (a reader that sees LSN n sees every transaction below it committed).
CREATE OR REPLACE FUNCTION cdc.capture() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  base bigint := nullif(current_setting('cdc.tx_base', true), '')::bigint;
  k int;
  ci text;
  meta jsonb;
BEGIN
  IF base IS NULL THEN
    PERFORM pg_advisory_xact_lock(7283011);
    base := nextval('cdc.lsn_seq') * 65536;
    PERFORM set_config('cdc.tx_base', base::text, true);
    PERFORM set_config('cdc.tx_k', '0', true);
    INSERT INTO cdc.lsn_time_mapping VALUES (cdc.lsn(base + 65535),
      now() AT TIME ZONE 'UTC', clock_timestamp() AT TIME ZONE 'UTC', cdc.lsn(txid_current()), cdc.lsn(base));
  END IF;
  k := current_setting('cdc.tx_k')::int + 1;
  PERFORM set_config('cdc.tx_k', k::text, true);
  FOR ci IN SELECT capture_instance FROM cdc.change_tables
            WHERE source_object_id = TG_RELID ORDER BY object_id LOOP
    meta := jsonb_build_object('__$start_lsn', '\x' || encode(cdc.lsn(base + 65535), 'hex'),
                               '__$seqval', '\x' || encode(cdc.lsn(base + k), 'hex'),
                               '__$command_id', k);
    IF TG_OP = 'INSERT' THEN
      PERFORM cdc.put(ci, to_jsonb(NEW) || meta || '{"__$operation": 2}');
    ELSIF TG_OP = 'DELETE' OR EXISTS (
        SELECT 1 FROM pg_index i JOIN pg_attribute a
          ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
        WHERE i.indrelid = TG_RELID AND i.indisprimary
          AND (to_jsonb(OLD) -> a.attname::text) IS DISTINCT FROM
              (to_jsonb(NEW) -> a.attname::text)) THEN
      -- SQL Server logs an update of a primary-key column as a delete and an insert (a
      -- split update): operations 1 and 2 at one __$seqval, never 3 and 4.
      PERFORM cdc.put(ci, to_jsonb(OLD) || meta || '{"__$operation": 1}');
      IF TG_OP = 'UPDATE' THEN
        PERFORM cdc.put(ci, to_jsonb(NEW) || meta || '{"__$operation": 2}');
      END IF;
    ELSE
      PERFORM cdc.put(ci, to_jsonb(OLD) || meta || '{"__$operation": 3}');
      PERFORM cdc.put(ci, to_jsonb(NEW) || meta || '{"__$operation": 4}');
    END IF;
  END LOOP;
  RETURN NULL;
END $fn$;

CREATE OR REPLACE FUNCTION cdc.put(ci text, row_ jsonb) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  EXECUTE format('INSERT INTO cdc.%I SELECT * FROM jsonb_populate_record(NULL::cdc.%I, $1)',
                 ci || '_CT', ci || '_CT') USING row_;
END $fn$;

-- SQL Server refuses TRUNCATE TABLE on a table enabled for CDC (error 4711); so does this.
CREATE OR REPLACE FUNCTION cdc.refuse_truncate() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'Cannot truncate table ''%.%'' because it is published for replication or '
    'enabled for Change Data Capture.', TG_TABLE_SCHEMA, TG_TABLE_NAME;
END $fn$;

-- sys.sp_cdc_enable_table: a capture instance (change table, its function, its columns).  Its
-- start_lsn is past every committed transaction: changes at or after it are in its change
-- table (SQL Server's meaning), so a second instance of a table takes over there.
CREATE OR REPLACE FUNCTION sys.sp_cdc_enable_table(source_schema text, source_name text,
    capture_instance text DEFAULT NULL) RETURNS text LANGUAGE plpgsql AS $fn$
DECLARE
  ci text := coalesce(capture_instance, source_schema || '_' || source_name);
  rel oid := format('%I.%I', source_schema, source_name)::regclass;
  ct_id int;
BEGIN
  -- No transaction may be between drawing its LSN and committing (capture()): the maximum LSN
  -- read below is final, and every later transaction sees this capture instance.
  PERFORM pg_advisory_xact_lock(7283011);
  EXECUTE format('CREATE TABLE cdc.%I AS SELECT NULL::bytea AS "__$start_lsn", '
    'NULL::bytea AS "__$end_lsn", NULL::bytea AS "__$seqval", NULL::int AS "__$operation", '
    'NULL::bytea AS "__$update_mask", s.*, NULL::int AS "__$command_id" FROM %I.%I s '
    'WITH NO DATA', ci || '_CT', source_schema, source_name);
  INSERT INTO cdc.change_tables (source_object_id, capture_instance, start_lsn)
    VALUES (rel, ci, sys.fn_cdc_increment_lsn(sys.fn_cdc_get_max_lsn()))
    RETURNING object_id INTO ct_id;
  INSERT INTO cdc.captured_columns (object_id, column_name, column_id, column_type,
                                    column_ordinal)
    SELECT ct_id, attname, attnum, format_type(atttypid, atttypmod), attnum
    FROM pg_attribute WHERE attrelid = rel AND attnum > 0 AND NOT attisdropped;
  EXECUTE format('CREATE OR REPLACE FUNCTION cdc.%I(from_lsn bytea, to_lsn bytea, '
    'row_filter text) RETURNS SETOF cdc.%I LANGUAGE sql STABLE AS $q$ SELECT * FROM cdc.%I '
    'WHERE "__$start_lsn" BETWEEN from_lsn AND to_lsn $q$',
    'fn_cdc_get_all_changes_' || ci, ci || '_CT', ci || '_CT');
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = rel AND tgname = 'cdc_no_truncate')
  THEN
    EXECUTE format('CREATE TRIGGER cdc_no_truncate BEFORE TRUNCATE ON %I.%I '
      'FOR EACH STATEMENT EXECUTE FUNCTION cdc.refuse_truncate()', source_schema, source_name);
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = rel AND tgname = 'cdc_capture') THEN
    EXECUTE format('CREATE CONSTRAINT TRIGGER cdc_capture AFTER INSERT OR UPDATE OR DELETE '
      'ON %I.%I DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION cdc.capture()',
      source_schema, source_name);
  END IF;
  RETURN ci;
END $fn$;

-- The catalog views the connector's schema reads use (sys.schemas, sys.tables, sys.columns):
-- user tables only, as SQL Server's sys.tables lists them; identity and computed columns from
-- PostgreSQL's identity and generated columns.
CREATE OR REPLACE VIEW sys.schemas AS
  SELECT n.oid::bigint AS schema_id, n.nspname::text AS name FROM pg_namespace n;
CREATE OR REPLACE VIEW sys.tables AS
  SELECT c.oid::bigint AS object_id, c.relname::text AS name, c.relnamespace::bigint AS schema_id
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p')
    AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'cdc', 'sys', 'emu', 'pg_toast');
CREATE OR REPLACE VIEW sys.columns AS
  SELECT a.attrelid::bigint AS object_id, a.attname::text AS name, a.attnum::int AS column_id,
         a.attidentity <> '' AS is_identity, a.attgenerated <> '' AS is_computed
  FROM pg_attribute a WHERE a.attnum > 0 AND NOT a.attisdropped;
