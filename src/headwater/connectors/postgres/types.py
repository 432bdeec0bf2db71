"""PostgreSQL type mapping: text output form → Debezium's Kafka Connect representation.

Values arrive in PostgreSQL's text output form (pgoutput in text mode, ``COPY ... TO STDOUT``),
produced on connections set to ``DateStyle=ISO``, ``IntervalStyle=postgres``,
``extra_float_digits=3`` and ``bytea_output=hex``.  `pg_column_mapping` is called once per
column (snapshot start, each Relation message) with a `PgType` the catalog built (domains
resolved to their base type, an array's element type, an enum's labels); it returns a
`ColumnMapping` whose ``convert`` is the per-value hot path.  Built-in types are chosen by OID,
extension types by name (`_BY_NAME`), enums by ``typtype``, arrays by their element type; adding
a type is one entry in `_BY_OID` or `_BY_NAME`.

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

from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, NamedTuple

from headwater.convert import (
    ColumnMapping,
    TypeModes,
    UnrepresentableValueError,
    binary_encoder,
    binary_fallback,
    binary_schema,
)
from headwater.convert.decimal import (
    DECIMAL,
    DOUBLE,
    EXACT,
    PRECISE,
    SCALE_PARAMETER,
    STRING_MODE,
    ConnectDecimal,
    connect_float,
    decimal_mapping,
    unscaled_value,
)
from headwater.convert.geometry import (
    GEOGRAPHY,
    GEOMETRY,
    geography_fallback,
    geography_value,
    geometry_fallback,
    geometry_schema,
    geometry_value,
    point_fallback,
    point_schema,
    point_value,
)
from headwater.convert.pg_arrays import array_converter
from headwater.convert.pg_geometric import (
    box_value,
    circle_schema,
    circle_value,
    geometric_fallback,
    line_schema,
    line_value,
    lseg_value,
    path_value,
    polygon_value,
)
from headwater.convert.pg_hstore import hstore_json, parse_hstore
from headwater.convert.pg_interval import interval_iso_string, interval_micro_duration
from headwater.convert.pg_money import money_decimal_text
from headwater.convert.temporal import (
    EPOCH_ORDINAL,
    MICROS_PER_SECOND,
    ZONED_TIME_FALLBACK,
    ZONED_TIMESTAMP_FALLBACK,
    date_schema,
    format_fraction,
    format_zoned_timestamp,
    parse_date,
    parse_time,
    parse_timestamp,
    parse_timestamp_tz,
    saturate_int64,
    time_is_micros,
    time_schema,
    timestamp_is_micros,
    timestamp_schema,
    zoned_time_from_text,
    zoned_time_schema,
    zoned_timestamp_schema,
)
from headwater.model.schema import (
    ARRAY,
    BOOLEAN,
    BYTES,
    FLOAT32,
    FLOAT64,
    INT16,
    INT32,
    INT64,
    MAP,
    STRING,
    ConnectSchema,
)

__all__ = [
    "ColumnMapping",
    "PgType",
    "TypeModes",
    "UnrepresentableValueError",
    "numeric_precision_scale",
    "pg_column_mapping",
    "temporal_precision",
]

# Built-in type OIDs (pg_type.h; stable across versions).
BOOL_OID = 16
BYTEA_OID = 17
CHAR_OID = 18
NAME_OID = 19
INT8_OID = 20
INT2_OID = 21
INT4_OID = 23
TEXT_OID = 25
OID_OID = 26
JSON_OID = 114
XML_OID = 142
POINT_OID = 600
LSEG_OID = 601
PATH_OID = 602
BOX_OID = 603
POLYGON_OID = 604
LINE_OID = 628
CIRCLE_OID = 718
CIDR_OID = 650
FLOAT4_OID = 700
FLOAT8_OID = 701
MACADDR8_OID = 774
MONEY_OID = 790
MACADDR_OID = 829
INET_OID = 869
BPCHAR_OID = 1042
VARCHAR_OID = 1043
DATE_OID = 1082
TIME_OID = 1083
TIMESTAMP_OID = 1114
TIMESTAMPTZ_OID = 1184
INTERVAL_OID = 1186
TIMETZ_OID = 1266
BIT_OID = 1560
VARBIT_OID = 1562
NUMERIC_OID = 1700
UUID_OID = 2950
TSVECTOR_OID = 3614
JSONB_OID = 3802
INT4RANGE_OID = 3904
NUMRANGE_OID = 3906
TSRANGE_OID = 3908
TSTZRANGE_OID = 3910
DATERANGE_OID = 3912
INT8RANGE_OID = 3926

UUID_NAME = "io.debezium.data.Uuid"
JSON_NAME = "io.debezium.data.Json"
XML_NAME = "io.debezium.data.Xml"
LTREE_NAME = "io.debezium.data.Ltree"
TSVECTOR_NAME = "io.debezium.data.Tsvector"  # sic: TsVector.LOGICAL_NAME
ENUM_NAME = "io.debezium.data.Enum"
BITS_NAME = "io.debezium.data.Bits"
MICRO_DURATION_NAME = "io.debezium.time.MicroDuration"
INTERVAL_NAME = "io.debezium.time.Interval"

# Built-in array types (pg_type.typarray of PostgreSQL 10-17) → element type, for callers that
# know only a column's OID; the catalog (`PgType.element`) covers every other array type.
BUILTIN_ARRAY_ELEMENTS: dict[int, int] = {
    1000: BOOL_OID, 1001: BYTEA_OID, 1002: CHAR_OID, 1003: NAME_OID, 1016: INT8_OID,
    1005: INT2_OID, 1007: INT4_OID, 1009: TEXT_OID, 1028: OID_OID, 199: JSON_OID,
    143: XML_OID, 1017: POINT_OID, 1020: BOX_OID, 651: CIDR_OID, 1021: FLOAT4_OID,
    1022: FLOAT8_OID, 775: MACADDR8_OID, 791: MONEY_OID, 1040: MACADDR_OID, 1041: INET_OID,
    1014: BPCHAR_OID, 1015: VARCHAR_OID, 1182: DATE_OID, 1183: TIME_OID, 1115: TIMESTAMP_OID,
    1185: TIMESTAMPTZ_OID, 1187: INTERVAL_OID, 1270: TIMETZ_OID, 1561: BIT_OID,
    1563: VARBIT_OID, 1231: NUMERIC_OID, 2951: UUID_OID, 3643: TSVECTOR_OID, 3807: JSONB_OID,
    3905: INT4RANGE_OID, 3907: NUMRANGE_OID, 3909: TSRANGE_OID, 3911: TSTZRANGE_OID,
    3913: DATERANGE_OID, 3927: INT8RANGE_OID, 1018: LSEG_OID, 1019: PATH_OID,
    1027: POLYGON_OID, 629: LINE_OID, 719: CIRCLE_OID,
}
# pg_type.typdelim is ',' for every built-in type but box.
_BUILTIN_DELIMITERS = {BOX_OID: ";"}
# pgjdbc's length of a varbit without one (Integer.MAX_VALUE): the Bits "length" parameter.
UNBOUNDED_BITS_LENGTH = 2_147_483_647

# timestamp 'infinity' / '-infinity': pgjdbc's PGStatement.DATE_POSITIVE/NEGATIVE_INFINITY taken
# as microseconds by Debezium (PostgresValueConverter.POSITIVE_INFINITY_LOCAL_DATE_TIME).
TIMESTAMP_POSITIVE_INFINITY_MICROS = 9_223_372_036_825_200_000
TIMESTAMP_NEGATIVE_INFINITY_MICROS = -9_223_372_036_832_400_000
TIMESTAMP_POSITIVE_INFINITY_MILLIS = TIMESTAMP_POSITIVE_INFINITY_MICROS // 1000
TIMESTAMP_NEGATIVE_INFINITY_MILLIS = TIMESTAMP_NEGATIVE_INFINITY_MICROS // 1000
# date 'infinity' / '-infinity': Headwater's choice (see the module docstring).
DATE_POSITIVE_INFINITY_DAYS = 2_147_483_647
DATE_NEGATIVE_INFINITY_DAYS = -2_147_483_648

DEFAULT_TEMPORAL_PRECISION = 6  # pgjdbc's (and so Debezium's) scale of time/timestamp(tz)



class PgType(NamedTuple):
    """What the type mapping needs to know about a column's type (built by the catalog).

    Domains are resolved: `oid`, `name` and `kind` are those of the domain's base type, and
    `typmod` is the column's modifier, else that of the nearest domain that has one.  For an
    array type, `element` describes the element type (domains resolved too; its `typmod` is the
    array column's) and the array is parsed with the element's `delimiter`.

    oid: pg_type.oid of the (base) type.
    name: pg_type.typname (``int4``, ``_int4``, ``hstore``, ``mood``); extension and user types
        are mapped by this name, since their OIDs differ between databases.
    typmod: atttypmod, -1 for none.
    kind: pg_type.typtype: ``b`` base, ``e`` enum, ``r`` range, ``m`` multirange, ``c``
        composite, ``p`` pseudo.
    enum_labels: an enum's labels in their sort order (pg_enum.enumsortorder).
    element: the element type of an array type, None otherwise.
    delimiter: pg_type.typdelim, the separator of this type's values inside an array.
    """

    oid: int
    name: str = ""
    typmod: int = -1
    kind: str = "b"
    enum_labels: tuple[str, ...] = ()
    element: PgType | None = None
    delimiter: str = ","


_Factory = Callable[[PgType, bool, TypeModes], ColumnMapping]


# ---------------------------------------------------------------------------------------------
# Type modifiers
# ---------------------------------------------------------------------------------------------


def numeric_precision_scale(type_modifier: int) -> tuple[int, int] | None:
    """(precision, scale) of a numeric typmod, None for an unconstrained numeric.

    typmod = ((precision << 16) | (scale & 0x7ff)) + 4; the scale is an 11-bit signed field
    since PostgreSQL 15 (NUMERIC(p, -s)), which is backward compatible with scales 0-1000.
    """
    if type_modifier < 4:
        return None
    tm = type_modifier - 4
    return (tm >> 16) & 0xFFFF, ((tm & 0x7FF) ^ 1024) - 1024


def temporal_precision(type_modifier: int) -> int:
    """Fractional-second precision of time/timetz/timestamp/timestamptz: the typmod, 6 if none."""
    if type_modifier < 0:
        return DEFAULT_TEMPORAL_PRECISION
    return min(type_modifier, 6)


# ---------------------------------------------------------------------------------------------
# Simple types
# ---------------------------------------------------------------------------------------------


def _simple(literal: str, convert: Callable[[str], Any], fallback: Any) -> _Factory:
    def factory(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
        return ColumnMapping(ConnectSchema(literal, optional), convert, fallback)

    return factory


def _named_string(name: str) -> _Factory:
    def factory(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
        return ColumnMapping(ConnectSchema(STRING, optional, name, 1), str, "")

    return factory


_BOOLEANS = {"t": True, "f": False, "true": True, "false": False}


def _to_bool(text: str) -> bool:
    try:
        return _BOOLEANS[text]
    except KeyError:
        raise ValueError(f"invalid boolean {text!r}") from None


# ---------------------------------------------------------------------------------------------
# numeric
# ---------------------------------------------------------------------------------------------


def _numeric(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    ps = numeric_precision_scale(t.typmod)
    if ps is None:
        precision: int | None = None
        scale: int | None = None
    else:
        precision, scale = ps
        if scale < 0:
            precision, scale = precision - scale, 0
    schema, convert, fallback = decimal_mapping(
        modes.decimal_handling_mode, precision, scale, optional
    )
    return ColumnMapping(schema, convert, fallback)


# ---------------------------------------------------------------------------------------------
# bytea
# ---------------------------------------------------------------------------------------------


def bytea_from_text(text: str) -> bytes:
    """bytea text output: hex (``\\x0102ff``) or the escape format (``ab\\000\\\\``)."""
    if text[:2] == "\\x":
        return bytes.fromhex(text[2:])
    out = bytearray()
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
        elif text[i + 1 : i + 2] == "\\":
            out.append(0x5C)
            i += 2
        else:
            octal = text[i + 1 : i + 4]
            if len(octal) != 3 or not all(ch in "01234567" for ch in octal):
                raise ValueError(f"invalid bytea escape at {i} in {text!r}")
            out.append(int(octal, 8))
            i += 4
    return bytes(out)


def _bytea(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    mode = modes.binary_handling_mode
    if mode == "bytes":
        convert: Callable[[str], Any] = bytea_from_text
    else:
        encode = binary_encoder(mode)

        def convert(text: str) -> Any:
            return encode(bytea_from_text(text))

    return ColumnMapping(binary_schema(mode, optional), convert, binary_fallback(mode))


# ---------------------------------------------------------------------------------------------
# date / time / timestamp / timestamptz / timetz
# ---------------------------------------------------------------------------------------------

_date_fromiso = date.fromisoformat
_time_fromiso = time.fromisoformat
_time_of_day = time
_datetime_fromiso = datetime.fromisoformat
_EPOCH = datetime(1970, 1, 1)
_ONE_MICRO = timedelta(microseconds=1)
_ONE_MILLI = timedelta(milliseconds=1)


def _date_days_slow(text: str) -> int:
    if text == "infinity":
        return DATE_POSITIVE_INFINITY_DAYS
    if text == "-infinity":
        return DATE_NEGATIVE_INFINITY_DAYS
    return parse_date(text)


def date_days(text: str) -> int:
    """Days since the epoch of a date's text (``infinity`` → INT32 max, see module doc)."""
    try:
        return _date_fromiso(text).toordinal() - EPOCH_ORDINAL
    except ValueError:
        return _date_days_slow(text)


def _date(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    return ColumnMapping(date_schema(modes.time_precision_mode, optional), date_days, 0)


def time_micros(text: str) -> int:
    """Microseconds past midnight of a time's text (``24:00:00`` → 86 400 000 000)."""
    try:
        t = _time_fromiso(text)
        return ((t.hour * 60 + t.minute) * 60 + t.second) * MICROS_PER_SECOND + t.microsecond
    except ValueError:
        return parse_time(text)


def time_millis(text: str) -> int:
    """Milliseconds past midnight (floored) of a time's text."""
    try:
        t = _time_fromiso(text)
        return ((t.hour * 60 + t.minute) * 60 + t.second) * 1000 + t.microsecond // 1000
    except ValueError:
        return parse_time(text) // 1000


def _time(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    precision = temporal_precision(t.typmod)
    mode = modes.time_precision_mode
    convert = time_micros if time_is_micros(precision, mode) else time_millis
    return ColumnMapping(time_schema(precision, mode, optional), convert, 0)


def _timestamp_micros_slow(text: str) -> int:
    if text == "infinity":
        return TIMESTAMP_POSITIVE_INFINITY_MICROS
    if text == "-infinity":
        return TIMESTAMP_NEGATIVE_INFINITY_MICROS
    return saturate_int64(parse_timestamp(text))


def timestamp_micros(text: str) -> int:
    """Microseconds since the epoch of a timestamp's text, read as UTC."""
    try:
        return (_datetime_fromiso(text) - _EPOCH) // _ONE_MICRO
    except ValueError:
        return _timestamp_micros_slow(text)


def _timestamp_millis_slow(text: str) -> int:
    if text == "infinity":
        return TIMESTAMP_POSITIVE_INFINITY_MILLIS
    if text == "-infinity":
        return TIMESTAMP_NEGATIVE_INFINITY_MILLIS
    return parse_timestamp(text) // 1000


def timestamp_millis(text: str) -> int:
    """Milliseconds (floored) since the epoch of a timestamp's text, read as UTC."""
    try:
        return (_datetime_fromiso(text) - _EPOCH) // _ONE_MILLI
    except ValueError:
        return _timestamp_millis_slow(text)


def _timestamp(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    precision = temporal_precision(t.typmod)
    mode = modes.time_precision_mode
    convert = timestamp_micros if timestamp_is_micros(precision, mode) else timestamp_millis
    return ColumnMapping(timestamp_schema(precision, mode, optional), convert, 0)


def _zoned_timestamp_slow(text: str, width: int) -> str:
    if text in {"infinity", "-infinity"}:
        return text
    try:  # any offset, years 1-9999 after conversion to UTC: C code
        dt = _datetime_fromiso(text)
        if dt.tzinfo is None:
            raise ValueError(f"timestamp with time zone {text!r} has no offset")
        dt = dt.astimezone(UTC)
    except (ValueError, OverflowError):  # BC, 5+ digit years, or leaving years 1-9999
        return format_zoned_timestamp(parse_timestamp_tz(text), width)
    iso = dt.isoformat()  # 2016-11-04T11:51:30[.123456]+00:00
    micros = dt.microsecond
    if micros and width == 6:
        return iso[:26] + "Z"
    return iso[:19] + format_fraction(micros, width) + "Z"


def zoned_timestamp_converter(precision: int) -> Callable[[str], str]:
    """timestamptz text → ``ZonedTimestamp`` with exactly `precision` fraction digits.

    The fast path handles PostgreSQL's UTC output (``2016-11-04 11:51:30.1+00``) by moving
    characters only; other offsets, BC and 5+ digit years are parsed and re-formatted.
    """
    width = precision
    if width > 0:
        zeros = "0" * width
        full = 23 + width  # "YYYY-MM-DD HH:MM:SS." + width digits + "+00"

        def convert(text: str) -> str:
            n = len(text)
            if 22 <= n <= full and text.endswith("+00") and text[4] == "-":
                if n == full:
                    return f"{text[:10]}T{text[11:-3]}Z"
                return f"{text[:10]}T{text[11:19]}.{(text[20:-3] + zeros)[:width]}Z"
            return _zoned_timestamp_slow(text, width)

        return convert

    def convert_iso(text: str) -> str:
        if len(text) >= 22 and text.endswith("+00") and text[4] == "-":
            return f"{text[:10]}T{text[11:-3]}Z"
        return _zoned_timestamp_slow(text, 0)

    return convert_iso


def _timestamptz(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    convert = zoned_timestamp_converter(temporal_precision(t.typmod))
    return ColumnMapping(zoned_timestamp_schema(optional), convert, ZONED_TIMESTAMP_FALLBACK)


def zoned_time(text: str) -> str:
    """timetz text → ``ZonedTime`` in UTC (PostgreSQL's ``+00`` output only gains its ``Z``)."""
    if text.endswith("+00"):
        return text[:-3] + "Z"
    try:
        t = _time_fromiso(text)
        offset = t.utcoffset()
    except ValueError:  # 24:00:00
        return zoned_time_from_text(text)
    if offset is None:
        raise ValueError(f"time with time zone {text!r} has no offset")
    secs = (t.hour * 60 + t.minute) * 60 + t.second - offset.days * 86_400 - offset.seconds
    minutes, second = divmod(secs % 86_400, 60)
    iso = _time_of_day(minutes // 60, minutes % 60, second, t.microsecond).isoformat()
    return (iso.rstrip("0") if t.microsecond else iso) + "Z"


def _timetz(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    return ColumnMapping(zoned_time_schema(optional), zoned_time, ZONED_TIME_FALLBACK)


# ---------------------------------------------------------------------------------------------
# bit, varbit
# ---------------------------------------------------------------------------------------------


def bit_as_bool(text: str) -> bool:
    """``bit(1)`` text → BOOLEAN (``Integer.valueOf(text, 2) != 0``)."""
    if text.strip("01"):
        raise ValueError(f"invalid bit string {text!r}")
    return "1" in text


def bits_from_text(text: str) -> bytes:
    """Bit string text → Debezium's ``Bits`` bytes: the string as a binary number, little-endian,
    in as few bytes as its highest set bit needs (``BitSet.toByteArray()``): ``101`` →
    ``05``, ``1000000001`` → ``01 02``, all zeros → empty."""
    if not text:
        return b""
    value = int(text, 2)
    return value.to_bytes((value.bit_length() + 7) >> 3, "little")


def _bits(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    if t.oid == VARBIT_OID or t.name in {"varbit", "bit varying"}:
        length = t.typmod if t.typmod >= 0 else UNBOUNDED_BITS_LENGTH
    else:
        length = t.typmod if t.typmod >= 0 else 1  # "bit" is bit(1)
    if length <= 1:
        return ColumnMapping(ConnectSchema(BOOLEAN, optional), bit_as_bool, False)
    schema = ConnectSchema(BYTES, optional, BITS_NAME, 1, {"length": str(length)})
    return ColumnMapping(schema, bits_from_text, b"")


# ---------------------------------------------------------------------------------------------
# money
# ---------------------------------------------------------------------------------------------


def _money(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    mode = modes.decimal_handling_mode
    digits = modes.money_fraction_digits
    if mode == DOUBLE:

        def to_double(text: str) -> float:
            return float(money_decimal_text(text))

        return ColumnMapping(ConnectSchema(FLOAT64, optional), to_double, 0.0)
    if mode == STRING_MODE:
        return ColumnMapping(
            ConnectSchema(STRING, optional), money_decimal_text, str(Decimal(0).scaleb(-digits))
        )
    if mode != PRECISE:
        raise ValueError(f"unknown decimal.handling.mode {mode!r}")
    quantum = Decimal(1).scaleb(-digits)
    encode = ConnectDecimal.of

    def to_decimal(text: str) -> ConnectDecimal:
        plain = money_decimal_text(text)
        dot = plain.find(".")
        if (len(plain) - dot - 1 if dot >= 0 else 0) == digits:
            return encode(int(plain[:dot] + plain[dot + 1 :] if dot >= 0 else plain), digits)
        d = Decimal(plain).quantize(quantum, rounding=ROUND_HALF_UP, context=EXACT)
        return encode(unscaled_value(d), digits)

    # Decimal.builder(scale): the Kafka Connect Decimal with no precision parameter.
    schema = ConnectSchema(BYTES, optional, DECIMAL, 1, {SCALE_PARAMETER: str(digits)})
    return ColumnMapping(schema, to_decimal, ConnectDecimal.of(0, digits))


# ---------------------------------------------------------------------------------------------
# interval
# ---------------------------------------------------------------------------------------------


def _interval(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    if modes.interval_handling_mode == "string":
        schema = ConnectSchema(STRING, optional, INTERVAL_NAME, 1)
        return ColumnMapping(schema, interval_iso_string, "P0Y0M0DT0H0M0S")
    schema = ConnectSchema(INT64, optional, MICRO_DURATION_NAME, 1)
    return ColumnMapping(schema, interval_micro_duration, 0)


# ---------------------------------------------------------------------------------------------
# hstore, point, PostGIS, enums
# ---------------------------------------------------------------------------------------------

_HSTORE_MAP_KEYS = ConnectSchema(STRING, False)
_HSTORE_MAP_VALUES = ConnectSchema(STRING, True)


def _hstore(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    if modes.hstore_handling_mode == "map":
        schema = ConnectSchema(MAP, optional, keys=_HSTORE_MAP_KEYS, values=_HSTORE_MAP_VALUES)
        return ColumnMapping(schema, parse_hstore, {})
    return ColumnMapping(ConnectSchema(STRING, optional, JSON_NAME, 1), hstore_json, "{}")


def _point(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    return ColumnMapping(point_schema(optional), point_value, point_fallback())


def _postgis(name: str) -> _Factory:
    value, fallback = ((geography_value, geography_fallback) if name == GEOGRAPHY
                       else (geometry_value, geometry_fallback))

    def factory(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
        return ColumnMapping(geometry_schema(name, optional), value, fallback())

    return factory


def _geometric(type_name: str, convert: Callable[[str], dict[str, Any]]) -> _Factory:
    """box / lseg / path / polygon (``Geometry`` v2), circle, line: always-optional schemas."""
    if type_name == "circle":
        schema = circle_schema()
    elif type_name == "line":
        schema = line_schema()
    else:
        schema = geometry_schema(GEOMETRY, True)

    def factory(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
        return ColumnMapping(schema, convert, geometric_fallback(type_name))

    return factory


def _enum(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    schema = ConnectSchema(STRING, optional, ENUM_NAME, 1, {"allowed": ",".join(t.enum_labels)})
    return ColumnMapping(schema, _identity, "")


# ---------------------------------------------------------------------------------------------
# Unknown types
# ---------------------------------------------------------------------------------------------


def _identity(text: str) -> str:
    return text


def unknown_mapping(optional: bool, modes: TypeModes) -> ColumnMapping:
    """The mapping of a type Headwater does not map (see the module docstring)."""
    if not modes.include_unknown_datatypes:
        return ColumnMapping(ConnectSchema(STRING, optional), _identity, "", supported=False)
    mode = modes.binary_handling_mode
    encode = binary_encoder(mode)

    def opaque(text: str) -> Any:
        return encode(text.encode("utf-8"))

    return ColumnMapping(binary_schema(mode, optional), opaque, binary_fallback(mode))


# ---------------------------------------------------------------------------------------------
# Arrays
# ---------------------------------------------------------------------------------------------


def _element_type(t: PgType) -> PgType | None:
    """The element type of an array type: from the catalog, a built-in OID or a ``_name``."""
    if t.element is not None:
        return t.element
    element_oid = BUILTIN_ARRAY_ELEMENTS.get(t.oid)
    if element_oid is not None:
        delimiter = _BUILTIN_DELIMITERS.get(element_oid, ",")
        return PgType(element_oid, "", t.typmod, delimiter=delimiter)
    if t.kind == "b" and t.oid not in _BY_OID and t.name[:1] == "_" and len(t.name) > 1:
        return PgType(0, t.name[1:], t.typmod)
    return None


def _array(element: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    inner = _mapping(element, True, modes)
    if not inner.supported:
        return unknown_mapping(optional, modes)
    schema = ConnectSchema(ARRAY, optional, items=inner.schema)
    return ColumnMapping(schema, array_converter(inner.convert, element.delimiter), [])


# ---------------------------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------------------------

_int16 = _simple(INT16, int, 0)
_int32 = _simple(INT32, int, 0)
_int64 = _simple(INT64, int, 0)
_float32 = _simple(FLOAT32, connect_float, 0.0)
_float64 = _simple(FLOAT64, connect_float, 0.0)
_bool = _simple(BOOLEAN, _to_bool, False)
_string = _simple(STRING, str, "")
_uuid = _named_string(UUID_NAME)
_json = _named_string(JSON_NAME)
_xml = _named_string(XML_NAME)
_ltree = _named_string(LTREE_NAME)
_tsvector = _named_string(TSVECTOR_NAME)
_geometry = _postgis(GEOMETRY)
_geography = _postgis(GEOGRAPHY)
_box = _geometric("box", box_value)
_lseg = _geometric("lseg", lseg_value)
_path = _geometric("path", path_value)
_polygon = _geometric("polygon", polygon_value)
_circle = _geometric("circle", circle_value)
_line = _geometric("line", line_value)

_BY_OID: dict[int, _Factory] = {
    BOOL_OID: _bool,
    BYTEA_OID: _bytea,
    CHAR_OID: _string,
    NAME_OID: _string,
    INT8_OID: _int64,
    INT2_OID: _int16,
    INT4_OID: _int32,
    TEXT_OID: _string,
    OID_OID: _int64,
    JSON_OID: _json,
    XML_OID: _xml,
    POINT_OID: _point,
    LSEG_OID: _lseg,
    PATH_OID: _path,
    BOX_OID: _box,
    POLYGON_OID: _polygon,
    LINE_OID: _line,
    CIRCLE_OID: _circle,
    CIDR_OID: _string,
    FLOAT4_OID: _float32,
    FLOAT8_OID: _float64,
    MACADDR8_OID: _string,
    MONEY_OID: _money,
    MACADDR_OID: _string,
    INET_OID: _string,
    BPCHAR_OID: _string,
    VARCHAR_OID: _string,
    DATE_OID: _date,
    TIME_OID: _time,
    TIMESTAMP_OID: _timestamp,
    TIMESTAMPTZ_OID: _timestamptz,
    INTERVAL_OID: _interval,
    TIMETZ_OID: _timetz,
    BIT_OID: _bits,
    VARBIT_OID: _bits,
    NUMERIC_OID: _numeric,
    UUID_OID: _uuid,
    TSVECTOR_OID: _tsvector,
    JSONB_OID: _json,
    INT4RANGE_OID: _string,
    NUMRANGE_OID: _string,
    TSRANGE_OID: _string,
    TSTZRANGE_OID: _string,
    DATERANGE_OID: _string,
    INT8RANGE_OID: _string,
}

# Types without a fixed OID (extensions) by pg_type.typname, and the built-in types under their
# typname and SQL spellings for callers that only know a name.
_BY_NAME: dict[str, _Factory] = {
    # extension types (Debezium's TypeRegistry looks these up by name as well)
    "hstore": _hstore,
    "ltree": _ltree,
    "citext": _string,
    "isbn": _string,
    "geometry": _geometry,
    "geography": _geography,
    # built-in types
    "bool": _bool,
    "boolean": _bool,
    "bytea": _bytea,
    "char": _string,  # typname of "char" (OID 18)
    "name": _string,
    "int8": _int64,
    "bigint": _int64,
    "bigserial": _int64,
    "int2": _int16,
    "smallint": _int16,
    "smallserial": _int16,
    "int4": _int32,
    "int": _int32,
    "integer": _int32,
    "serial": _int32,
    "text": _string,
    "oid": _int64,
    "json": _json,
    "jsonb": _json,
    "xml": _xml,
    "point": _point,
    "lseg": _lseg,
    "path": _path,
    "box": _box,
    "polygon": _polygon,
    "line": _line,
    "circle": _circle,
    "cidr": _string,
    "inet": _string,
    "macaddr": _string,
    "macaddr8": _string,
    "money": _money,
    "float4": _float32,
    "real": _float32,
    "float8": _float64,
    "double precision": _float64,
    "bpchar": _string,
    "character": _string,
    "varchar": _string,
    "character varying": _string,
    "date": _date,
    "time": _time,
    "time without time zone": _time,
    "timestamp": _timestamp,
    "timestamp without time zone": _timestamp,
    "timestamptz": _timestamptz,
    "timestamp with time zone": _timestamptz,
    "interval": _interval,
    "timetz": _timetz,
    "time with time zone": _timetz,
    "bit": _bits,
    "varbit": _bits,
    "bit varying": _bits,
    "numeric": _numeric,
    "decimal": _numeric,
    "uuid": _uuid,
    "tsvector": _tsvector,
    "int4range": _string,
    "int8range": _string,
    "numrange": _string,
    "tsrange": _string,
    "tstzrange": _string,
    "daterange": _string,
}


def _normalized_name(type_name: str) -> str:
    return type_name.rsplit(".", 1)[-1].strip('"').lower()


def _mapping(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    element = _element_type(t)
    if element is not None:
        return _array(element, optional, modes)
    factory = _BY_OID.get(t.oid)
    if factory is None:
        if t.kind == "e":
            factory = _enum
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
