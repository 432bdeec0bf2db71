"""The SQL of the JDBC targets, per database: URLs, types, DDL and the merge statements.

One class per database on a shared base (as sqlglot does), each overriding only what differs;
`jdbc_target` runs the statements, in order, inside one transaction.

Types (Arrow type of the decoded column -> SQL):

| Arrow                       | PostgreSQL            | MariaDB                                   |
|-----------------------------|-----------------------|-------------------------------------------|
| int8 / int16                | smallint              | TINYINT / SMALLINT                        |
| int32 / int64               | integer / bigint      | INT / BIGINT                              |
| float32 / float64           | real / double precision | FLOAT / DOUBLE                          |
| bool                        | boolean               | BOOLEAN (TINYINT(1))                      |
| string                      | text                  | LONGTEXT utf8mb4_nopad_bin (key: VARCHAR) |
| binary                      | bytea                 | LONGBLOB (key: VARBINARY)                 |
| decimal128(p, s)            | numeric(p, s)         | DECIMAL(p, s)                             |
| date32                      | date                  | DATE                                      |
| timestamp (no zone)         | timestamp             | DATETIME(6)                               |
| timestamp (UTC)             | timestamptz           | DATETIME(6), the UTC wall time            |
| list / map / struct         | text (JSON)           | LONGTEXT (JSON)                           |

Read back (`Dialect.arrow_type`, for Datastream's JSON events, which carry no types), each SQL
type gives the Arrow type of its row here (int8 comes back as PostgreSQL's int16, a MariaDB
zoned timestamp without its zone, nested values as strings).

Lists, maps and structs are stored as JSON text: a list as an array, a struct as an object, a
map as an object when its keys are strings (else an array of [key, value] pairs); decimals and
dates inside are strings, bytes base64.  MariaDB text is compared byte-wise
(`utf8mb4_nopad_bin`) so that keys differing in case or trailing spaces stay distinct, and its
string keys are VARCHARs sharing InnoDB's 3072-byte key limit.

Timestamps travel through the staging table as ISO text (cast back in the merge), so neither
the JVM's nor the Spark session's time zone can shift them on the way.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, ClassVar
from urllib.parse import parse_qsl

import orjson
import pyarrow as pa
import pyarrow.compute as pc

SEQ = "__hw_sequence"
START = "__START_AT"
END = "__END_AT"
OP = "__hw_op"
KEY = "__hw_key"  # the key as JSON (in the state table: which key a delete was for)
KEY_HASH = "__hw_key_hash"  # sha1 of KEY: what the state table is joined on
FLAG = "__hw_u_"  # + column position: the column was not sent (unchanged TOAST)
PROGRESS = "_headwater_progress"
STATE = "_headwater_state"


class JdbcUrlError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class JdbcLocation:
    """Where a JDBC URL points, for Spark's writer and for a direct Python connection."""

    dialect: str  # "postgresql" or "mariadb"
    host: str
    port: int
    database: str | None
    params: dict[str, str] = field(default_factory=dict)
    spark_url: str = ""  # the URL to hand to Spark (MariaDB: jdbc:mysql:...?permitMysqlScheme)


def parse_jdbc_url(url: str) -> JdbcLocation:
    """`jdbc:postgresql://host[:port][/db][?k=v&...]`, `jdbc:mysql://...`, `jdbc:mariadb://...`.

    Only the first host of a multi-host URL is used by the direct connection.  A MariaDB URL
    is handed to Spark as `jdbc:mysql:` with `permitMysqlScheme` (a `jdbc:mariadb:` URL makes
    Spark pick its generic dialect, which quotes identifiers with double quotes).
    """
    if not url.startswith("jdbc:"):
        raise JdbcUrlError(f"not a JDBC URL: {url!r} (expected jdbc:postgresql://host/db or "
                           "jdbc:mysql://host/db)")
    scheme, _, rest = url[len("jdbc:"):].partition("://")
    scheme = scheme.lower()
    if scheme == "postgresql":
        dialect, default_port = "postgresql", 5432
    elif scheme in ("mysql", "mariadb"):
        dialect, default_port = "mariadb", 3306
    else:
        raise JdbcUrlError(f"unsupported JDBC URL {url!r}: the JDBC targets are PostgreSQL "
                           "(jdbc:postgresql://) and MariaDB (jdbc:mysql:// or jdbc:mariadb://)")
    if not rest:
        raise JdbcUrlError(f"JDBC URL {url!r} has no //host part")
    authority, _, tail = rest.partition("/")
    path, _, query = tail.partition("?")
    if "?" in authority:  # jdbc:postgresql://host?x=y
        authority, _, query = authority.partition("?")
    first = authority.split(",")[0]
    if first.startswith("["):  # [::1]:5432
        host, _, port_text = first[1:].partition("]")
        port_text = port_text.lstrip(":")
    else:
        host, _, port_text = first.partition(":")
    try:
        port = int(port_text) if port_text else default_port
    except ValueError:
        raise JdbcUrlError(f"JDBC URL {url!r}: bad port {port_text!r}") from None
    params = dict(parse_qsl(query, keep_blank_values=True))
    spark_url = url
    if dialect == "mariadb":
        spark_url = "jdbc:mysql://" + rest
        if "permitMysqlScheme" not in params:
            spark_url += ("&" if "?" in spark_url else "?") + "permitMysqlScheme"
    return JdbcLocation(dialect, host or "localhost", port, path or None, params, spark_url)


# -- values ------------------------------------------------------------------------------------
def is_nested(t: pa.DataType) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t)
                or pa.types.is_fixed_size_list(t) or pa.types.is_map(t)
                or pa.types.is_struct(t))


def _jsonable(v: Any, t: pa.DataType) -> Any:
    if v is None:
        return None
    if pa.types.is_map(t):
        pairs = [(k, _jsonable(x, t.item_type)) for k, x in (v.items() if isinstance(v, dict)
                                                               else v)]
        if all(isinstance(k, str) for k, _ in pairs):
            return dict(pairs)
        return [[_jsonable(k, t.key_type), x] for k, x in pairs]
    if pa.types.is_struct(t):
        return {f.name: _jsonable(v.get(f.name), f.type) for f in t}
    if is_nested(t):
        return [_jsonable(x, t.value_type) for x in v]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode()
    if isinstance(v, Decimal):
        return str(v)
    return v


def to_json(v: Any, t: pa.DataType) -> str | None:
    """A list, map or struct value as the JSON text the targets store."""
    if v is None:
        return None
    return orjson.dumps(_jsonable(v, t), default=str).decode()


def repr_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type a column has on its way into a table: nested values become JSON text."""
    return pa.string() if is_nested(t) or pa.types.is_null(t) else t


def repr_value(v: Any, t: pa.DataType) -> Any:
    """A decoded value in the form the target stores it (see `repr_type`)."""
    return to_json(v, t) if is_nested(t) else v


def repr_column(column: pa.ChunkedArray, t: pa.DataType) -> pa.ChunkedArray | pa.Array:
    """A column of `t` in the form the target stores it (`repr_type`, `repr_value`)."""
    if is_nested(t):
        return pa.array([to_json(v, t) for v in column.to_pylist()], pa.string())
    return column.cast(repr_type(t))


# -- dialects ----------------------------------------------------------------------------------
class Dialect:
    """What differs between the JDBC databases; statements take quoted table names."""

    name: ClassVar[str]
    driver_class: ClassVar[str]
    debian_package: ClassVar[str]
    seq_type: ClassVar[str]
    short_text: ClassVar[str]  # an ASCII string of at most 128 characters
    transactional_ddl: ClassVar[bool]
    quote_char: ClassVar[str]
    spark_options: ClassVar[dict[str, str]] = {}

    # identifiers
    def q(self, name: str) -> str:
        c = self.quote_char
        return c + name.replace(c, c + c) + c

    def table(self, schema: str, name: str) -> str:
        return f"{self.q(schema)}.{self.q(name)}"

    # types
    def column_type(self, t: pa.DataType, key_length: int | None = None) -> str:
        raise NotImplementedError

    def stage_type(self, t: pa.DataType, key_length: int | None = None) -> str:
        """The staging column's type: the target's, except timestamps (ISO text)."""
        if pa.types.is_timestamp(t):
            return self.short_text
        return self.column_type(t, key_length)

    def from_stage(self, expr: str, t: pa.DataType) -> str:
        """An expression turning a staged column back into the target's type."""
        if pa.types.is_timestamp(t):
            return f"CAST({expr} AS {self.column_type(t)})"
        return expr

    def stage_array(self, arr: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
        """A column of a staging table as Spark must write it (timestamps as ISO text)."""
        if pa.types.is_timestamp(arr.type):
            return pc.cast(arr, pa.string())
        return arr

    def param(self, v: Any, t: pa.DataType) -> Any:
        """A value as a query parameter of the direct connection."""
        return repr_value(v, t)

    def from_db(self, v: Any, t: pa.DataType) -> Any:
        """A value read with the direct connection, as `repr_value` would give it."""
        if isinstance(v, memoryview):
            return bytes(v)
        if isinstance(v, dt.datetime) and v.tzinfo is not None:
            return v.astimezone(dt.UTC)
        return v

    def key_lengths(self, key_types: Sequence[pa.DataType]) -> int | None:
        """Length of the string and binary key columns (None: unbounded is fine)."""
        return None

    # connections
    def connect(self, loc: JdbcLocation, user: str | None, password: str | None) -> Any:
        raise NotImplementedError

    # DDL
    def create_table(self, table: str, columns: Sequence[tuple[str, str, bool]],
                     primary_key: Sequence[str]) -> str:
        cols = [f"{self.q(n)} {t}{' NOT NULL' if not_null else ''}" for n, t, not_null in columns]
        if primary_key:
            cols.append(f"PRIMARY KEY ({', '.join(self.q(k) for k in primary_key)})")
        return f"CREATE TABLE IF NOT EXISTS {table} ({', '.join(cols)}){self.table_options}"

    table_options: ClassVar[str] = ""

    def add_column(self, table: str, name: str, sql_type: str) -> str:
        return f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {self.q(name)} {sql_type}"

    def drop_table(self, table: str) -> str:
        return f"DROP TABLE IF EXISTS {table}"

    def retype_column(self, table: str, name: str, sql_type: str) -> list[str]:
        """Statements giving a column a new type, its values NULL (the caller recomputes
        them): no conversion of the database's can fail or differ from the caller's."""
        raise NotImplementedError

    def temp_table(self, schema: str, name: str) -> str:
        """A session's temporary table (never a regular table of that name)."""
        raise NotImplementedError

    drop_temp: ClassVar[str]  # DROP of a temporary table, {} its name

    def update_from(self, target: str, source: str, column: str, keys: Sequence[str]) -> str:
        """Sets `column` of the target's rows to the source's `v` of the same key."""
        raise NotImplementedError

    columns_query: ClassVar[str]  # (schema, table) -> rows of (column name, declared type)

    def canonical_type(self, sql: str) -> str:
        """A column type as the database reports it, comparable with `column_type`'s."""
        raise NotImplementedError

    # The Arrow type of each type `column_type` writes, as `canonical_type` gives it back.
    arrow_types: ClassVar[dict[str, pa.DataType]]
    _DECIMAL = re.compile(r"(?:numeric|decimal)\((\d+),(\d+)\)")

    def arrow_type(self, sql: str) -> pa.DataType | None:
        """The Arrow type `column_type` maps to a column's declared type `sql` (None: not a
        type the target writes): what a batch without types (Datastream's JSON events) keeps
        where its values fit.  Lists, maps and structs come back as text, their JSON."""
        t = self.canonical_type(sql)
        decimal = self._DECIMAL.fullmatch(t)
        if decimal is not None:
            precision, scale = int(decimal[1]), int(decimal[2])
            return (pa.decimal128 if precision <= 38 else pa.decimal256)(precision, scale)
        found = self.arrow_types.get(t)
        return found if found is not None else self.arrow_types.get(re.sub(r"\(\d+\)$", "", t))

    def same_type(self, existing: str, wanted: str) -> bool:
        a, b = self.canonical_type(existing), self.canonical_type(wanted)
        timestamps = ("timestamp", "timestamptz")
        return a == b or (a in timestamps and b in timestamps)  # zone changes: as Delta

    def bookkeeping_ddl(self, schema: str) -> list[str]:
        raise NotImplementedError

    # bookkeeping
    def lock_progress(self, progress: str) -> str:
        return (f"SELECT batch_id FROM {progress} WHERE pipeline_id = %s AND table_name = %s "
                "FOR UPDATE")

    def read_progress(self, progress: str) -> str:
        return f"SELECT batch_id FROM {progress} WHERE pipeline_id = %s AND table_name = %s"

    def upsert_progress(self, progress: str) -> str:
        raise NotImplementedError

    def upsert_state(self, state: str, select: str) -> str:
        """Inserts the state rows `select` yields, keeping the newest sequence per slot."""
        raise NotImplementedError

    # staging filters and fills (SCD1)
    def drop_staged_below(self, staging: str) -> str:
        return f"DELETE FROM {staging} WHERE {self.q(SEQ)} < %s"

    def drop_staged_deleted(self, staging: str, state: str) -> str:
        raise NotImplementedError

    def fill_unavailable(self, staging: str, target: str, keys: Sequence[tuple[str, pa.DataType]],
                         toast: Sequence[tuple[str, str, pa.DataType]]) -> str:
        """Sets each unavailable (TOAST) staged column to the target's value."""
        raise NotImplementedError

    def to_stage(self, expr: str, t: pa.DataType) -> str:
        """A target column's value as its staging column holds it (timestamps as text)."""
        if pa.types.is_timestamp(t):
            return f"CAST({expr} AS {self.stage_cast})"
        return expr

    stage_cast: ClassVar[str] = "text"

    # merges
    def upsert_newer(self, target: str, staging: str, columns: Sequence[tuple[str, pa.DataType]],
                     keys: Sequence[str]) -> str:
        """SCD1: staged upserts win where the target's row is older (or absent)."""
        raise NotImplementedError

    def delete_older(self, target: str, staging: str,
                     keys: Sequence[tuple[str, pa.DataType]]) -> str:
        """SCD1: staged deletes remove the target's row where it is older."""
        raise NotImplementedError

    def delete_below(self, target: str) -> str:
        return f"DELETE FROM {target} WHERE {self.q(SEQ)} < %s"

    def upsert_versions(self, target: str, staging: str,
                        columns: Sequence[tuple[str, pa.DataType]], keys: Sequence[str]) -> str:
        """SCD2: staged versions replace the target's of the same key and start."""
        raise NotImplementedError

    def delete_stale_versions(self, target: str, staging: str,
                              keys: Sequence[tuple[str, pa.DataType]]) -> str:
        """SCD2: versions of a staged key that the rebuilt history no longer has."""
        on = self._key_match("t", "a", keys)
        on_start = self._key_match("t", "s", keys) + f" AND t.{self.q(START)} = s.{self.q(START)}"
        return (f"DELETE {self._delete_alias}FROM {target} AS t "
                f"WHERE EXISTS (SELECT 1 FROM {staging} AS a WHERE {on}) "
                f"AND NOT EXISTS (SELECT 1 FROM {staging} AS s WHERE {on_start})")

    _delete_alias: ClassVar[str] = ""

    def close_open_versions(self, target: str) -> str:
        return (f"UPDATE {target} SET {self.q(END)} = %s "
                f"WHERE {self.q(END)} IS NULL AND {self.q(START)} < %s")

    def insert_all(self, target: str, staging: str,
                   columns: Sequence[tuple[str, pa.DataType]]) -> str:
        names = ", ".join(self.q(n) for n, _ in columns)
        exprs = ", ".join(self.from_stage(f"s.{self.q(n)}", t) for n, t in columns)
        return f"INSERT INTO {target} ({names}) SELECT {exprs} FROM {staging} AS s"

    def _key_match(self, t: str, s: str, keys: Sequence[tuple[str, pa.DataType]]) -> str:
        return " AND ".join(
            f"{t}.{self.q(k)} = {self.from_stage(f'{s}.{self.q(k)}', kt)}" for k, kt in keys)

    def _select(self, columns: Sequence[tuple[str, pa.DataType]], extra: Sequence[str]) -> str:
        return ", ".join([self.from_stage(f"s.{self.q(n)}", t) for n, t in columns]
                         + [f"s.{self.q(n)}" for n in extra])


class PostgresDialect(Dialect):
    name = "postgresql"
    driver_class = "org.postgresql.Driver"
    debian_package = "libpostgresql-jdbc-java"
    seq_type = 'text COLLATE "C"'
    short_text = 'text COLLATE "C"'
    transactional_ddl = True
    quote_char = '"'
    spark_options = {"reWriteBatchedInserts": "true"}

    def column_type(self, t: pa.DataType, key_length: int | None = None) -> str:
        if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_uint8(t):
            return "smallint"
        if pa.types.is_int32(t) or pa.types.is_uint16(t):
            return "integer"
        if pa.types.is_int64(t) or pa.types.is_uint32(t):
            return "bigint"
        if pa.types.is_uint64(t):
            return "numeric(20, 0)"
        if pa.types.is_float32(t) or pa.types.is_float16(t):
            return "real"
        if pa.types.is_float64(t):
            return "double precision"
        if pa.types.is_boolean(t):
            return "boolean"
        if pa.types.is_decimal(t):
            return f"numeric({t.precision}, {t.scale})"
        if pa.types.is_date(t):
            return "date"
        if pa.types.is_timestamp(t):
            return "timestamptz" if t.tz is not None else "timestamp"
        if (pa.types.is_binary(t) or pa.types.is_large_binary(t)
                or pa.types.is_fixed_size_binary(t)):
            return "bytea"
        return "text"  # strings, times of day, JSON

    arrow_types = {
        "smallint": pa.int16(), "integer": pa.int32(), "bigint": pa.int64(),
        "real": pa.float32(), "doubleprecision": pa.float64(), "boolean": pa.bool_(),
        "date": pa.date32(), "timestamp": pa.timestamp("us"),
        "timestamptz": pa.timestamp("us", tz="UTC"), "bytea": pa.binary(), "text": pa.string(),
    }

    columns_query = (
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
        "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped "
        "ORDER BY a.attnum")

    def retype_column(self, table: str, name: str, sql_type: str) -> list[str]:
        return [f"ALTER TABLE {table} ALTER COLUMN {self.q(name)} TYPE {sql_type} "
                f"USING CAST(NULL AS {sql_type})"]

    def temp_table(self, schema: str, name: str) -> str:
        return f"pg_temp.{self.q(name)}"

    drop_temp = "DROP TABLE IF EXISTS {}"

    def update_from(self, target: str, source: str, column: str, keys: Sequence[str]) -> str:
        on = " AND ".join(f"t.{self.q(k)} = s.{self.q(k)}" for k in keys)
        return f"UPDATE {target} AS t SET {self.q(column)} = s.v FROM {source} AS s WHERE {on}"

    def canonical_type(self, sql: str) -> str:
        t = re.sub(r"\s+collate\s+\S+", "", sql.lower())
        t = (t.replace("timestamp without time zone", "timestamp")
             .replace("timestamp with time zone", "timestamptz")
             .replace("timestamp(6) without time zone", "timestamp")
             .replace("timestamp(6) with time zone", "timestamptz"))
        return re.sub(r"\s+", "", t)

    def connect(self, loc: JdbcLocation, user: str | None, password: str | None) -> Any:
        import psycopg2

        kw: dict[str, Any] = {"host": loc.host, "port": loc.port,
                              "dbname": loc.database or user or "postgres"}
        if user:
            kw["user"] = user
        if password:
            kw["password"] = password
        for name in ("sslmode", "sslrootcert", "sslcert", "sslkey", "connect_timeout"):
            if name in loc.params:
                kw[name] = loc.params[name]
        if "connectTimeout" in loc.params:
            kw["connect_timeout"] = loc.params["connectTimeout"]
        conn = psycopg2.connect(**kw)
        conn.autocommit = False
        with conn.cursor() as cur:
            cur.execute("SET TIME ZONE 'UTC'")
        conn.commit()
        return conn

    def bookkeeping_ddl(self, schema: str) -> list[str]:
        return [
            f"CREATE SCHEMA IF NOT EXISTS {self.q(schema)}",
            f"CREATE TABLE IF NOT EXISTS {self.table(schema, PROGRESS)} ("
            "pipeline_id text NOT NULL, table_name text NOT NULL, batch_id bigint NOT NULL, "
            "updated_at timestamptz NOT NULL DEFAULT now(), "
            "PRIMARY KEY (pipeline_id, table_name))",
            f"CREATE TABLE IF NOT EXISTS {self.table(schema, STATE)} ("
            "table_name text NOT NULL, kind text NOT NULL, key_hash text NOT NULL, "
            f'slot text COLLATE "C" NOT NULL, key_json text, {self.q(SEQ)} {self.seq_type} '
            "NOT NULL, PRIMARY KEY (table_name, kind, key_hash, slot))",
        ]

    def upsert_progress(self, progress: str) -> str:
        return (f"INSERT INTO {progress} AS p (pipeline_id, table_name, batch_id) "
                "VALUES (%s, %s, %s) ON CONFLICT (pipeline_id, table_name) DO UPDATE SET "
                "batch_id = GREATEST(p.batch_id, EXCLUDED.batch_id), updated_at = now()")

    def upsert_state(self, state: str, select: str) -> str:
        seq = self.q(SEQ)
        return (f"INSERT INTO {state} AS st (table_name, kind, key_hash, slot, key_json, {seq}) "
                f"{select} ON CONFLICT (table_name, kind, key_hash, slot) DO UPDATE SET "
                f"key_json = EXCLUDED.key_json, {seq} = EXCLUDED.{seq} "
                f"WHERE st.{seq} < EXCLUDED.{seq}")

    def drop_staged_deleted(self, staging: str, state: str) -> str:
        seq = self.q(SEQ)
        return (f"DELETE FROM {staging} AS s USING {state} AS st WHERE st.table_name = %s "
                f"AND st.kind = 'delete' AND st.slot = '' AND st.key_hash = s.{self.q(KEY_HASH)} "
                f"AND s.{seq} <= st.{seq}")

    def fill_unavailable(self, staging: str, target: str, keys: Sequence[tuple[str, pa.DataType]],
                         toast: Sequence[tuple[str, str, pa.DataType]]) -> str:
        sets = ", ".join(
            f"{self.q(c)} = CASE WHEN s.{self.q(f)} THEN {self.to_stage(f't.{self.q(c)}', t)} "
            f"ELSE s.{self.q(c)} END" for c, f, t in toast)
        any_flag = " OR ".join(f"s.{self.q(f)}" for _, f, _ in toast)
        return (f"UPDATE {staging} AS s SET {sets} FROM {target} AS t "
                f"WHERE {self._key_match('t', 's', keys)} AND ({any_flag})")

    def upsert_newer(self, target: str, staging: str, columns: Sequence[tuple[str, pa.DataType]],
                     keys: Sequence[str]) -> str:
        seq = self.q(SEQ)
        names = ", ".join([self.q(n) for n, _ in columns] + [seq])
        sets = ", ".join([f"{self.q(n)} = EXCLUDED.{self.q(n)}" for n, _ in columns
                          if n not in keys] + [f"{seq} = EXCLUDED.{seq}"])
        return (f"INSERT INTO {target} AS t ({names}) SELECT {self._select(columns, [SEQ])} "
                f"FROM {staging} AS s WHERE s.{self.q(OP)} = 'u' "
                f"ON CONFLICT ({', '.join(self.q(k) for k in keys)}) DO UPDATE SET {sets} "
                f"WHERE t.{seq} < EXCLUDED.{seq}")

    def delete_older(self, target: str, staging: str,
                     keys: Sequence[tuple[str, pa.DataType]]) -> str:
        seq = self.q(SEQ)
        return (f"DELETE FROM {target} AS t USING {staging} AS s WHERE s.{self.q(OP)} = 'd' "
                f"AND {self._key_match('t', 's', keys)} AND t.{seq} < s.{seq}")

    def upsert_versions(self, target: str, staging: str,
                        columns: Sequence[tuple[str, pa.DataType]], keys: Sequence[str]) -> str:
        names = ", ".join([self.q(n) for n, _ in columns] + [self.q(START), self.q(END)])
        sets = ", ".join([f"{self.q(n)} = EXCLUDED.{self.q(n)}" for n, _ in columns
                          if n not in keys] + [f"{self.q(END)} = EXCLUDED.{self.q(END)}"])
        conflict = ", ".join([self.q(k) for k in keys] + [self.q(START)])
        return (f"INSERT INTO {target} AS t ({names}) "
                f"SELECT {self._select(columns, [START, END])} FROM {staging} AS s "
                f"ON CONFLICT ({conflict}) DO UPDATE SET {sets}")


class MariaDBDialect(Dialect):
    """MariaDB (and MySQL syntax): DDL commits implicitly, so `jdbc_target` runs it before the
    transaction (it is idempotent: CREATE ... IF NOT EXISTS, ADD COLUMN IF NOT EXISTS)."""

    name = "mariadb"
    driver_class = "org.mariadb.jdbc.Driver"
    debian_package = "libmariadb-java"
    seq_type = "VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin"
    short_text = "VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin"
    transactional_ddl = False
    quote_char = "`"
    spark_options = {"rewriteBatchedStatements": "true"}
    table_options = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin"
    _delete_alias = "t "
    stage_cast = "CHAR CHARACTER SET ascii"
    _TEXT = "CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"

    def column_type(self, t: pa.DataType, key_length: int | None = None) -> str:
        if pa.types.is_int8(t):
            return "TINYINT"
        if pa.types.is_int16(t) or pa.types.is_uint8(t):
            return "SMALLINT"
        if pa.types.is_int32(t) or pa.types.is_uint16(t):
            return "INT"
        if pa.types.is_int64(t) or pa.types.is_uint32(t):
            return "BIGINT"
        if pa.types.is_uint64(t):
            return "BIGINT UNSIGNED"
        if pa.types.is_float32(t) or pa.types.is_float16(t):
            return "FLOAT"
        if pa.types.is_float64(t):
            return "DOUBLE"
        if pa.types.is_boolean(t):
            return "BOOLEAN"
        if pa.types.is_decimal(t):
            return f"DECIMAL({min(t.precision, 65)}, {min(t.scale, 38)})"
        if pa.types.is_date(t):
            return "DATE"
        if pa.types.is_timestamp(t):
            return "DATETIME(6)"
        if (pa.types.is_binary(t) or pa.types.is_large_binary(t)
                or pa.types.is_fixed_size_binary(t)):
            return f"VARBINARY({key_length})" if key_length else "LONGBLOB"
        if key_length:
            return f"VARCHAR({key_length}) {self._TEXT}"
        return f"LONGTEXT {self._TEXT}"

    # (a zoned timestamp is stored as its UTC wall time: it comes back without its zone)
    arrow_types = {
        "tinyint(1)": pa.bool_(), "tinyint": pa.int8(), "smallint": pa.int16(),
        "int": pa.int32(), "bigint": pa.int64(), "bigintunsigned": pa.uint64(),
        "float": pa.float32(), "double": pa.float64(), "date": pa.date32(),
        "datetime(6)": pa.timestamp("us"), "longblob": pa.binary(), "varbinary": pa.binary(),
        "longtext": pa.string(), "varchar": pa.string(),
    }

    def retype_column(self, table: str, name: str, sql_type: str) -> list[str]:
        # (the ALTER commits the UPDATE with it: `jdbc_target.retype` keeps a pending row)
        return [f"UPDATE {table} SET {self.q(name)} = NULL",
                f"ALTER TABLE {table} MODIFY COLUMN {self.q(name)} {sql_type}"]

    def temp_table(self, schema: str, name: str) -> str:
        return self.table(schema, name)

    drop_temp = "DROP TEMPORARY TABLE IF EXISTS {}"

    def update_from(self, target: str, source: str, column: str, keys: Sequence[str]) -> str:
        on = " AND ".join(f"t.{self.q(k)} = s.{self.q(k)}" for k in keys)
        return f"UPDATE {target} AS t JOIN {source} AS s ON {on} SET t.{self.q(column)} = s.v"

    def key_lengths(self, key_types: Sequence[pa.DataType]) -> int | None:
        # InnoDB keys hold 3072 bytes; utf8mb4 takes up to 4 per character, and SCD2 adds
        # the 128-byte start to the key: share what is left among the string/binary columns.
        n = sum(1 for t in key_types if pa.types.is_string(t) or pa.types.is_large_string(t)
                or pa.types.is_binary(t) or pa.types.is_large_binary(t) or is_nested(t))
        return max(32, 2800 // (4 * n)) if n else None

    columns_query = ("SELECT column_name, column_type FROM information_schema.columns "
                     "WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position")

    def canonical_type(self, sql: str) -> str:
        t = sql.lower()
        t = re.sub(r"\s+(character set|charset|collate)\s+\S+", "", t)
        if t in ("boolean", "bool"):
            return "tinyint(1)"
        if not t.startswith("tinyint(1)"):  # display widths mean nothing, except BOOLEAN's
            t = re.sub(r"\b(tinyint|smallint|mediumint|int|bigint)\(\d+\)", r"\1", t)
        return re.sub(r"\s+", "", t)

    def stage_array(self, arr: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
        t = arr.type
        if pa.types.is_timestamp(t) and t.tz is not None:
            arr = pc.cast(arr, pa.timestamp(t.unit))  # the UTC wall time
        return super().stage_array(arr)

    def param(self, v: Any, t: pa.DataType) -> Any:
        if isinstance(v, dt.datetime) and v.tzinfo is not None:
            return v.astimezone(dt.UTC).replace(tzinfo=None)
        return super().param(v, t)

    def from_db(self, v: Any, t: pa.DataType) -> Any:
        if v is None:
            return None
        if pa.types.is_boolean(t):
            return bool(v)
        if pa.types.is_timestamp(t) and t.tz is not None and isinstance(v, dt.datetime):
            return v.replace(tzinfo=dt.UTC)
        return super().from_db(v, t)

    def connect(self, loc: JdbcLocation, user: str | None, password: str | None) -> Any:
        import pymysql  # type: ignore[import-untyped]

        conn = pymysql.connect(
            host=loc.host, port=loc.port, user=user or loc.params.get("user") or "",
            password=password or "", database=loc.database, charset="utf8mb4",
            autocommit=False, connect_timeout=10)
        with conn.cursor() as cur:
            cur.execute("SET SESSION time_zone = '+00:00'")
        conn.commit()
        return conn

    def bookkeeping_ddl(self, schema: str) -> list[str]:
        ascii_bin = "CHARACTER SET ascii COLLATE ascii_bin"
        return [
            f"CREATE DATABASE IF NOT EXISTS {self.q(schema)} CHARACTER SET utf8mb4",
            f"CREATE TABLE IF NOT EXISTS {self.table(schema, PROGRESS)} ("
            f"pipeline_id VARCHAR(190) {self._TEXT} NOT NULL, "
            f"table_name VARCHAR(400) {self._TEXT} NOT NULL, batch_id BIGINT NOT NULL, "
            "updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), "
            f"PRIMARY KEY (pipeline_id, table_name)){self.table_options}",
            f"CREATE TABLE IF NOT EXISTS {self.table(schema, STATE)} ("
            f"table_name VARCHAR(400) {self._TEXT} NOT NULL, kind VARCHAR(16) {ascii_bin} "
            f"NOT NULL, key_hash VARCHAR(40) {ascii_bin} NOT NULL, slot VARCHAR(128) "
            f"{ascii_bin} NOT NULL, key_json LONGTEXT {self._TEXT}, {self.q(SEQ)} "
            f"{self.seq_type} NOT NULL, PRIMARY KEY (table_name, kind, key_hash, slot))"
            f"{self.table_options}",
        ]

    def upsert_progress(self, progress: str) -> str:
        return (f"INSERT INTO {progress} (pipeline_id, table_name, batch_id) "
                "VALUES (%s, %s, %s) ON DUPLICATE KEY UPDATE "
                "batch_id = GREATEST(batch_id, VALUES(batch_id)), "
                "updated_at = CURRENT_TIMESTAMP(6)")

    def upsert_state(self, state: str, select: str) -> str:
        seq = self.q(SEQ)
        newer = f"{state}.{seq} < VALUES({seq})"
        # Assignments run left to right and see the earlier ones: the sequence goes last.
        return (f"INSERT INTO {state} (table_name, kind, key_hash, slot, key_json, {seq}) "
                f"{select} ON DUPLICATE KEY UPDATE "
                f"{state}.key_json = IF({newer}, VALUES(key_json), {state}.key_json), "
                f"{state}.{seq} = IF({newer}, VALUES({seq}), {state}.{seq})")

    def drop_staged_deleted(self, staging: str, state: str) -> str:
        seq = self.q(SEQ)
        return (f"DELETE s FROM {staging} AS s JOIN {state} AS st "
                f"ON st.key_hash = s.{self.q(KEY_HASH)} WHERE st.table_name = %s "
                f"AND st.kind = 'delete' AND st.slot = '' AND s.{seq} <= st.{seq}")

    def fill_unavailable(self, staging: str, target: str, keys: Sequence[tuple[str, pa.DataType]],
                         toast: Sequence[tuple[str, str, pa.DataType]]) -> str:
        sets = ", ".join(
            f"s.{self.q(c)} = IF(s.{self.q(f)}, {self.to_stage(f't.{self.q(c)}', t)}, "
            f"s.{self.q(c)})" for c, f, t in toast)
        any_flag = " OR ".join(f"s.{self.q(f)}" for _, f, _ in toast)
        return (f"UPDATE {staging} AS s JOIN {target} AS t ON {self._key_match('t', 's', keys)} "
                f"SET {sets} WHERE {any_flag}")

    def upsert_newer(self, target: str, staging: str, columns: Sequence[tuple[str, pa.DataType]],
                     keys: Sequence[str]) -> str:
        seq = self.q(SEQ)
        names = ", ".join([self.q(n) for n, _ in columns] + [seq])
        newer = f"{target}.{seq} < VALUES({seq})"
        # Each assignment sees the ones before it: the sequence, which the guard reads,
        # must be updated last.
        sets = ", ".join(
            [f"{target}.{self.q(n)} = IF({newer}, VALUES({self.q(n)}), {target}.{self.q(n)})"
             for n, _ in columns if n not in keys]
            + [f"{target}.{seq} = IF({newer}, VALUES({seq}), {target}.{seq})"])
        return (f"INSERT INTO {target} ({names}) SELECT {self._select(columns, [SEQ])} "
                f"FROM {staging} AS s WHERE s.{self.q(OP)} = 'u' "
                f"ON DUPLICATE KEY UPDATE {sets}")

    def delete_older(self, target: str, staging: str,
                     keys: Sequence[tuple[str, pa.DataType]]) -> str:
        seq = self.q(SEQ)
        return (f"DELETE t FROM {target} AS t JOIN {staging} AS s "
                f"ON {self._key_match('t', 's', keys)} "
                f"WHERE s.{self.q(OP)} = 'd' AND t.{seq} < s.{seq}")

    def upsert_versions(self, target: str, staging: str,
                        columns: Sequence[tuple[str, pa.DataType]], keys: Sequence[str]) -> str:
        names = ", ".join([self.q(n) for n, _ in columns] + [self.q(START), self.q(END)])
        sets = ", ".join(
            [f"{target}.{self.q(n)} = VALUES({self.q(n)})" for n, _ in columns if n not in keys]
            + [f"{target}.{self.q(END)} = VALUES({self.q(END)})"])
        return (f"INSERT INTO {target} ({names}) "
                f"SELECT {self._select(columns, [START, END])} FROM {staging} AS s "
                f"ON DUPLICATE KEY UPDATE {sets}")


DIALECTS: dict[str, Dialect] = {"postgresql": PostgresDialect(), "mariadb": MariaDBDialect()}
