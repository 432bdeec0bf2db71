"""PostgreSQL type mapping: text output form → Debezium's Kafka Connect representation.

Values arrive in PostgreSQL's text output form (pgoutput in text mode, ``COPY ... TO STDOUT``),
produced on connections set to ``DateStyle=ISO``, ``IntervalStyle=postgres``,
``extra_float_digits=3`` and ``bytea_output=hex``.  `pg_column_mapping` is called once per
column (snapshot start, each Relation message) with a `PgType` the catalog built (domains
resolved to their base type, an array's element type, an enum's labels); it returns a
`ColumnMapping` whose ``convert`` is the per-value hot path.  Built-in types are chosen by OID,
extension types by name, enums by ``typtype``, arrays by their element type.  Each family of
types is a module of this package that declares the OIDs and names it serves in its own
``BY_OID`` / ``BY_NAME`` tables (`numeric`, `binary`, `temporal`, `geometric`, `text`; `oids`
holds the OID constants, `base` what they share, `arrays` the arrays); this module merges them
into the dispatch, so adding a type is one entry in its family's ``BY_OID`` or ``BY_NAME``.

Mapped here (modes: ``time.precision.mode`` A = adaptive, M = adaptive_time_microseconds,
C = connect; ``decimal.handling.mode`` precise / double / string; "optional" = nullable field):

=======================  ======================================================================
int2 / int4 / int8       INT16 / INT32 / INT64 (serial types are their base types)
oid                      INT64
float4 / float8          FLOAT32 / FLOAT64, including NaN, ±Infinity and -0
numeric                  see `headwater.convert.decimal` (precise / double / string)
money                    precise: BYTES Connect ``Decimal`` with parameter ``scale`` =
                         ``money.fraction.digits`` (default 2; no precision parameter);
                         double: FLOAT64; string: STRING ``-1234.56`` (`headwater.convert
                         .pg_money`)
bool                     BOOLEAN (``t`` / ``f``)
bit(1), varbit(1)        BOOLEAN
bit(n>1), varbit[(n)]    BYTES ``io.debezium.data.Bits`` version 1, parameter ``length`` = n
                         (2147483647 for varbit without a length); the bit string read as a
                         binary number, little-endian, in as few bytes as its highest set bit
                         needs (Debezium's ``BitSet.toByteArray()``): ``B'101'`` → ``05``,
                         ``B'1000000001'`` → ``01 02``, all zeros → empty bytes
text, varchar, bpchar,   STRING, as PostgreSQL prints it (bpchar keeps its padding spaces)
name, "char", citext,
inet, cidr, macaddr,
macaddr8, isbn
int4range, int8range,    STRING, PostgreSQL's text (``[1,5)``, ``empty``, ``[2020-01-01,)``)
numrange, tsrange,
tstzrange, daterange
bytea                    ``binary.handling.mode``: bytes → BYTES; base64, base64-url-safe, hex →
                         STRING (hex output ``\\x0102ff``; the escape format is read as well)
date                     INT32 ``io.debezium.time.Date`` days (C: Kafka ``Date``)
time(p)                  A: p 0-3 INT32 ``Time`` ms, p 4-6 and no p INT64 ``MicroTime`` µs;
                         M: ``MicroTime``; C: INT32 Kafka ``Time`` ms. ``24:00:00`` is 86400 s.
timestamp(p)             A, M: p 0-3 INT64 ``Timestamp`` ms, p 4-6 and no p ``MicroTimestamp``
                         µs; C: INT64 Kafka ``Timestamp`` ms. Read as UTC.
timestamptz(p)           STRING ``io.debezium.time.ZonedTimestamp``, UTC, with exactly p fraction
                         digits (6 without p; none at p = 0 for whole seconds), e.g.
                         ``2018-06-20T13:13:16.945104Z``, ``2016-11-04T11:51:30.000000Z``
timetz                   STRING ``io.debezium.time.ZonedTime`` in UTC, trailing zeros stripped,
                         e.g. ``11:51:30.123789Z``; ``24:00:00+00`` stays ``24:00:00Z``
interval                 ``interval.handling.mode``: numeric → INT64
                         ``io.debezium.time.MicroDuration`` (month = 30.4375 days), string →
                         STRING ``io.debezium.time.Interval`` ``P1Y2M3DT4H5M6.78S``
                         (`headwater.convert.pg_interval`)
uuid                     STRING ``io.debezium.data.Uuid``
json, jsonb              STRING ``io.debezium.data.Json``, the text as is
xml                      STRING ``io.debezium.data.Xml``
tsvector                 STRING ``io.debezium.data.Tsvector`` (sic), the text as is
ltree                    STRING ``io.debezium.data.Ltree``
hstore                   ``hstore.handling.mode``: json → STRING ``io.debezium.data.Json``
                         ``{"k":"v","n":null}``; map → MAP<STRING, optional STRING>
                         (`headwater.convert.pg_hstore`)
enum types               STRING ``io.debezium.data.Enum`` version 1, parameter ``allowed`` = the
                         labels in their sort order, comma-separated
point                    STRUCT ``io.debezium.data.geometry.Point`` {x, y FLOAT64, wkb optional
                         BYTES (21-byte OGC WKB of the point), srid optional INT32 (null)}
box, lseg, path,         STRUCT ``io.debezium.data.geometry.Geometry`` version 2 {wkb BYTES, srid
polygon                  optional INT32, extensions optional MAP<STRING,STRING>}, always
                         optional: little-endian WKB Polygon / LineString, ``extensions``
                         ``{"type": "box"}`` etc. and, for path, ``"closed"``
                         (`headwater.convert.pg_geometric`)
circle                   STRUCT ``io.debezium.data.geometry.Circle`` {center Point, radius
                         FLOAT64}, always optional
line                     STRUCT ``io.debezium.data.geometry.Line`` {a, b, c FLOAT64}, always
                         optional
geometry                 STRUCT ``io.debezium.data.geometry.Geometry`` version 2 (always
                         optional; ``extensions`` null): PostGIS's EWKB bytes and their SRID
geography                STRUCT ``io.debezium.data.geometry.Geography`` version 1 {wkb BYTES,
                         srid optional INT32} (`headwater.convert.geometry`)
arrays (``_type``,       ARRAY of the element's schema made optional (elements may be NULL),
``type[]``)              for every element type above, enums and domains included; see below
domains                  their base type, with the column's, else the nearest domain's,
                         length/scale
=======================  ======================================================================

Decisions, with the Debezium evidence (``PostgresValueConverter``, ``PostgresType``,
``TypeRegistry``, ``PostgresConnection`` and their tests, 3.x main):

* ZonedTimestamp fraction: ``ZonedTimestamp.toIsoString(value, ..., fractionalWidth)`` is given
  the column scale, i.e. the timestamptz precision (6 without one), and pads to exactly that
  many digits (``AbstractRecordsProducerTest``: ``tz_zero TIMESTAMPTZ`` →
  ``"+21016-11-04T06:51:30.000000Z"``; arrays ``"2020-04-01T11:51:02.000000Z"``).  Precision 0
  uses ``ISO_OFFSET_DATE_TIME`` (no fraction for whole seconds).  The older guide's examples
  without padding predate DBZ-5996/DBZ-6163 (Debezium 2.2).
* Years: ``+21016-11-04T...Z`` above 9999; BC years are astronomical (``4714-12-31 ... BC`` →
  ``-4713-12-31T...Z``), as Debezium's streaming path and ``java.time`` print them.
* ``infinity`` / ``-infinity``: timestamptz emits the strings ``"infinity"`` / ``"-infinity"``;
  timestamp emits pgjdbc's ``PGStatement.DATE_POSITIVE_INFINITY`` /
  ``DATE_NEGATIVE_INFINITY`` read as microseconds, ``9223372036825200000`` /
  ``-9223372036832400000`` (``MicroTimestamp``; Debezium's documented values), and those
  divided by 1000 for millisecond types.  For ``date`` Debezium has no consistent value (the
  streaming constants ``POSITIVE_INFINITY_LOCAL_DATE = -5877611-06-21`` even put +infinity
  before -infinity, debezium/dbz#2524, and a snapshot wraps an int overflow); Headwater emits the
  INT32 extremes ``2147483647`` / ``-2147483648``.
* Timestamps beyond ``294247-01-10T04:00:54.775807`` (PostgreSQL allows up to 294276 AD) do
  not fit INT64 microseconds; they saturate to the INT64 bounds (Debezium would fail).
* numeric NaN / ±Infinity in precise mode raise `UnrepresentableValueError` (Debezium fails the
  connector with "...set decimal handling mode to 'string'"); see `headwater.convert.decimal`.
* ``NUMERIC(p, s)`` with a negative scale (PostgreSQL 15) is declared as scale 0 and precision
  ``p - s``: its values are integers, and Avro, Spark and most sinks reject negative decimal
  scales (Debezium reads the scale through pgjdbc's ``typmod & 0xFFFF`` and gets nonsense).
* ``time(0-3)`` and ``timestamp(0-3)`` hold whole milliseconds (PostgreSQL rounds on input), so
  the millisecond types lose nothing; ``connect`` mode floors finer values to milliseconds.
* money (current Debezium, not the 1.0 guide, which has no money row): ``moneySchema()`` is
  ``Decimal.builder(money.fraction.digits)`` / ``float64`` / ``string`` by
  ``decimal.handling.mode``; streaming parses ``$1,234.56`` / ``-$1,234.56`` into a
  ``BigDecimal`` (``AbstractColumnValue.asMoney``; Debezium's snapshot reads money through
  pgjdbc's ``getDouble`` and loses digits beyond 2^53, Headwater is exact in both).  The text
  depends on the server's ``lc_monetary``; the C / POSIX / en_US locales print ``$1,234.56``,
  and other layouts are read best-effort (`headwater.convert.pg_money`).
  ``money.fraction.digits`` is `TypeModes.money_fraction_digits`.
* interval numeric mode reproduces Debezium's double arithmetic bit for bit (including its
  truncation, which puts some values one microsecond below the exact figure); string mode
  prints the seconds exactly where Debezium's double round trip prints e.g. ``6.005022999`` for
  ``6.005023`` (see `headwater.convert.pg_interval`).
* hstore: the guide's example ``{"key" : "val"}`` has spaces Debezium's Jackson generator does
  not write; current Debezium writes ``{"key":"val"}``.  Key order is PostgreSQL's (Debezium's is
  Java ``HashMap`` order): equal JSON objects, possibly different bytes for several keys.
* bit / varbit: ``BIT(1)`` and (current Debezium) ``VARBIT(1)`` are BOOLEAN; ``Bits`` bytes are
  sized by the highest set bit, not by the declared length (``PostgresValueConverter
  .convertBits`` recomputes ``numBytes`` from ``BitSet.length()``), so ``B'00000000'`` is empty.
* PostGIS ``wkb`` holds the EWKB as PostGIS prints it (with the SRID flag and SRID when the value
  has one, Z/M as EWKB flags), exactly as ``PostgisGeometry.fromHexEwkb``; the guide says "OGC
  WKB", but Debezium has always emitted EWKB.  `headwater.convert.geometry.ewkb_to_wkb` turns it
  into ISO WKB (what ``ST_AsBinary`` returns).  ``srid`` is null without an SRID (current
  Debezium; 1.x wrote 0).  A missing NOT NULL value is ``GEOMETRYCOLLECTION EMPTY``.
* Geometric types other than point (line, lseg, box, path, polygon, circle): Debezium 3.6.1
  has no converter for them (unknown types there); 3.7.0.Alpha2, the newest release, maps them
  (dbz#2135) and Headwater follows it, see `headwater.convert.pg_geometric`.  The same release
  made ``Geometry`` version 2 (an ``extensions`` field; the schema always optional), which
  PostGIS geometry and MySQL geometry columns share; ``Geography`` stays version 1.  Debezium
  has no array converter for them (their arrays are omitted, like point[]); Headwater maps
  ``box[]``, ``lseg[]``, ``path[]``, ``polygon[]``, ``circle[]`` and ``line[]`` like its other
  arrays.
* Enum ``allowed``: the labels in ``enumsortorder`` (declaration order, ``ALTER TYPE ... ADD
  VALUE BEFORE`` respected).  Debezium aggregates ``pg_enum`` without an ORDER BY, which yields
  the same order unless labels were added with BEFORE/AFTER.
* Domains: the guide says a domain over a domain does not inherit the inner domain's
  length/scale; current Debezium does (``PostgresConnection`` asks its ``TypeRegistry``, which
  walks the domain chain: ``PostgresType.getDefaultLength``), and so does Headwater: the typmod
  is the column's, else the nearest domain's up the chain.
* Arrays: current Debezium maps arrays of int2/4/8, oid, float4/8, numeric, bool, text, varchar,
  char, bpchar, date, time, timetz, timestamp, timestamptz, uuid, json(b), inet, cidr, macaddr,
  macaddr8, the range types, bytea, enums, hstore, ltree, citext, geometry and geography, each as
  ARRAY of the element schema (optional), elements converted as the scalar type with the array
  column's length/scale.  It has no converter yet (DBZ-459) for money[], name[], interval[],
  varbit[], bit[], xml[], point[] and omits those columns; Headwater maps them like the others.
  Debezium's comment says domain-element arrays only work through ``include.unknown.datatypes``;
  Headwater resolves the element's domain.  Element schemas are always optional: Debezium's
  generic array path (enum arrays) declares them required, so a NULL element fails there.
  Multi-dimensional values are flattened in row-major order (``{{1,2},{3,4}}`` → ``[1,2,3,4]``):
  Debezium's element converters receive the sub-arrays and emit a null per sub-array.  A NOT
  NULL array's fallback is ``[]``.
* Arrays of unknown element types: without ``include.unknown.datatypes`` the column is unknown;
  with it, ARRAY of the opaque binary representation, one element per array element (as
  Debezium).

Unknown types (everything not listed above: tid, xid,
xid8, cid, pg_lsn, tsquery, txid_snapshot, jsonpath, regclass and friends, user ranges,
multiranges, composite types, other extension types): with ``include_unknown_datatypes`` the
value is Debezium's opaque representation, the UTF-8 bytes of the text under
``binary.handling.mode`` (BYTES, or base64/hex STRING), ``supported=True``.  Without it Debezium
omits the field and warns; the mapping says ``supported=False`` with an optional STRING schema and
the identity converter, and the caller warns once and passes the text through (it can also omit
the field).
"""

from __future__ import annotations

from headwater.connectors.postgres.types import binary, geometric, numeric, temporal, text
from headwater.connectors.postgres.types.arrays import array_mapping, element_type
from headwater.connectors.postgres.types.base import (
    DEFAULT_TEMPORAL_PRECISION,
    Factory,
    PgType,
    numeric_precision_scale,
    temporal_precision,
)
from headwater.connectors.postgres.types.binary import (
    BITS_NAME,
    UNBOUNDED_BITS_LENGTH,
    bit_as_bool,
    bits_from_text,
    bytea_from_text,
)
from headwater.connectors.postgres.types.oids import (
    BIT_OID,
    BOOL_OID,
    BOX_OID,
    BPCHAR_OID,
    BUILTIN_ARRAY_ELEMENTS,
    BYTEA_OID,
    CHAR_OID,
    CIDR_OID,
    CIRCLE_OID,
    DATE_OID,
    DATERANGE_OID,
    FLOAT4_OID,
    FLOAT8_OID,
    INET_OID,
    INT2_OID,
    INT4_OID,
    INT4RANGE_OID,
    INT8_OID,
    INT8RANGE_OID,
    INTERVAL_OID,
    JSON_OID,
    JSONB_OID,
    LINE_OID,
    LSEG_OID,
    MACADDR8_OID,
    MACADDR_OID,
    MONEY_OID,
    NAME_OID,
    NUMERIC_OID,
    NUMRANGE_OID,
    OID_OID,
    PATH_OID,
    POINT_OID,
    POLYGON_OID,
    TEXT_OID,
    TIME_OID,
    TIMESTAMP_OID,
    TIMESTAMPTZ_OID,
    TIMETZ_OID,
    TSRANGE_OID,
    TSTZRANGE_OID,
    TSVECTOR_OID,
    UUID_OID,
    VARBIT_OID,
    VARCHAR_OID,
    XML_OID,
)
from headwater.connectors.postgres.types.temporal import (
    DATE_NEGATIVE_INFINITY_DAYS,
    DATE_POSITIVE_INFINITY_DAYS,
    INTERVAL_NAME,
    MICRO_DURATION_NAME,
    TIMESTAMP_NEGATIVE_INFINITY_MICROS,
    TIMESTAMP_NEGATIVE_INFINITY_MILLIS,
    TIMESTAMP_POSITIVE_INFINITY_MICROS,
    TIMESTAMP_POSITIVE_INFINITY_MILLIS,
    date_days,
    time_micros,
    time_millis,
    timestamp_micros,
    timestamp_millis,
    zoned_time,
    zoned_timestamp_converter,
)
from headwater.connectors.postgres.types.text import (
    ENUM_NAME,
    JSON_NAME,
    LTREE_NAME,
    TSVECTOR_NAME,
    UUID_NAME,
    XML_NAME,
    enum_mapping,
    unknown_mapping,
)
from headwater.convert import ColumnMapping, TypeModes, UnrepresentableValueError

__all__ = [
    "BITS_NAME", "BIT_OID", "BOOL_OID", "BOX_OID", "BPCHAR_OID", "BUILTIN_ARRAY_ELEMENTS",
    "BYTEA_OID", "CHAR_OID", "CIDR_OID", "CIRCLE_OID", "DATERANGE_OID",
    "DATE_NEGATIVE_INFINITY_DAYS", "DATE_OID", "DATE_POSITIVE_INFINITY_DAYS",
    "DEFAULT_TEMPORAL_PRECISION", "ENUM_NAME", "FLOAT4_OID", "FLOAT8_OID", "INET_OID", "INT2_OID",
    "INT4RANGE_OID", "INT4_OID", "INT8RANGE_OID", "INT8_OID", "INTERVAL_NAME", "INTERVAL_OID",
    "JSONB_OID", "JSON_NAME", "JSON_OID", "LINE_OID", "LSEG_OID", "LTREE_NAME", "MACADDR8_OID",
    "MACADDR_OID", "MICRO_DURATION_NAME", "MONEY_OID", "NAME_OID", "NUMERIC_OID", "NUMRANGE_OID",
    "OID_OID", "PATH_OID", "POINT_OID", "POLYGON_OID", "TEXT_OID", "TIMESTAMPTZ_OID",
    "TIMESTAMP_NEGATIVE_INFINITY_MICROS", "TIMESTAMP_NEGATIVE_INFINITY_MILLIS", "TIMESTAMP_OID",
    "TIMESTAMP_POSITIVE_INFINITY_MICROS", "TIMESTAMP_POSITIVE_INFINITY_MILLIS", "TIMETZ_OID",
    "TIME_OID", "TSRANGE_OID", "TSTZRANGE_OID", "TSVECTOR_NAME", "TSVECTOR_OID",
    "UNBOUNDED_BITS_LENGTH", "UUID_NAME", "UUID_OID", "VARBIT_OID", "VARCHAR_OID", "XML_NAME",
    "XML_OID", "ColumnMapping", "PgType", "TypeModes", "UnrepresentableValueError", "bit_as_bool",
    "bits_from_text", "bytea_from_text", "date_days", "numeric_precision_scale",
    "pg_column_mapping", "temporal_precision", "time_micros", "time_millis", "timestamp_micros",
    "timestamp_millis", "unknown_mapping", "zoned_time", "zoned_timestamp_converter",
]

# No two families claim an OID or a name (tests/unit/postgres/test_pg_type_dispatch.py).
_FAMILIES = (numeric, binary, temporal, geometric, text)
_BY_OID: dict[int, Factory] = {oid: f for m in _FAMILIES for oid, f in m.BY_OID.items()}
# Types without a fixed OID (extensions) by pg_type.typname, and the built-in types under their
# typname and SQL spellings for callers that only know a name.
_BY_NAME: dict[str, Factory] = {name: f for m in _FAMILIES for name, f in m.BY_NAME.items()}


def _normalized_name(type_name: str) -> str:
    return type_name.rsplit(".", 1)[-1].strip('"').lower()


def _mapping(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    element = element_type(t, _BY_OID)
    if element is not None:
        return array_mapping(_mapping(element, True, modes), element.delimiter, optional, modes)
    factory = _BY_OID.get(t.oid)
    if factory is None:
        if t.kind == "e":
            factory = enum_mapping
        elif t.name:
            factory = _BY_NAME.get(_normalized_name(t.name))
    if factory is None:
        return unknown_mapping(optional, modes)
    return factory(t, optional, modes)


def pg_column_mapping(pg_type: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    """The Connect schema, converter and NOT NULL fallback of one PostgreSQL column.

    Built-in types are chosen by `pg_type.oid`, enums by `pg_type.kind`, extension types by
    `pg_type.name` (pg_type.typname, optionally schema-qualified or quoted), arrays by their
    element type.  ``PgType(oid, name, typmod)`` is enough for all but enums and the arrays of
    non-built-in types, which need the catalog's `kind`, `enum_labels` and `element`.
    """
    return _mapping(pg_type, optional, modes)
