"""Which compiled kernel (_copykernels.c) renders a PostgreSQL column's snapshot values.

Chosen once per column from its type and the connector's modes, next to the converter types/
picked (tables.build_codec): a column gets a kernel only where the kernel's output is, value
for value, the converter's output through orjson.  Every other column (floats, arrays, money,
interval, hstore, bits, geometry, timetz, extension and unknown types, columns whose
converter a column mapper wrapped) keeps its per-value converter inside the same column-wise
chunk: `PER_VALUE`, which the snapshot logs per table.
"""

from __future__ import annotations

import functools
import logging
from typing import NamedTuple

from headwater.connectors.postgres.types import (
    BOOL_OID,
    BPCHAR_OID,
    BYTEA_OID,
    CHAR_OID,
    CIDR_OID,
    DATE_OID,
    INET_OID,
    INT2_OID,
    INT4_OID,
    INT8_OID,
    JSON_OID,
    JSONB_OID,
    MACADDR8_OID,
    MACADDR_OID,
    NAME_OID,
    NUMERIC_OID,
    OID_OID,
    TEXT_OID,
    TIME_OID,
    TIMESTAMP_OID,
    TIMESTAMPTZ_OID,
    UUID_OID,
    VARCHAR_OID,
    XML_OID,
    PgType,
    TypeModes,
    numeric_precision_scale,
    temporal_precision,
)
from headwater.convert.decimal import DOUBLE, STRING_MODE
from headwater.convert.temporal import time_is_micros, timestamp_is_micros

log = logging.getLogger("headwater.connectors.postgres.snapshot")

# Column kinds: the kernel a column's values go through (FALLBACK: the Python converter).
# _copykernels.c has the same numbers (tests/unit/test_copy_kernels.py checks they agree).
FALLBACK = 0
INT = 1  # int2/int4/int8/oid: the text is the JSON number
BOOL = 2  # t/f
STRING = 3  # text-like: COPY-unescaped, then JSON-escaped as orjson does
DECIMAL = 4  # numeric(p,s) precise: the Connect Decimal (base64 of the unscaled value)
VSD = 5  # numeric precise: VariableScaleDecimal {"scale":s,"value":"<base64>"}
DECIMAL_STRING = 6  # numeric string mode: BigDecimal.toString() (param: scale, -1 variable)
DATE = 7  # days since the epoch
TIME_MICROS = 8
TIME_MILLIS = 9
TIMESTAMP_MICROS = 10
TIMESTAMP_MILLIS = 11
ZONED_TIMESTAMP = 12  # param: fraction digits
BYTEA = 13  # param: BYTEA_BASE64, BYTEA_BASE64_URL or BYTEA_HEX

BYTEA_BASE64 = 0  # binary.handling.mode bytes (JsonConverter base64) and base64
BYTEA_BASE64_URL = 1
BYTEA_HEX = 2


class ColumnKind(NamedTuple):
    kind: int  # one of the kinds above
    param: int = 0  # the kind's parameter (scale, fraction digits, binary mode)


PER_VALUE = ColumnKind(FALLBACK)  # the column's converter, value by value

# Types whose converter is `str` (or the identity): their text is the value.
_TEXT_OIDS = frozenset({
    TEXT_OID, VARCHAR_OID, BPCHAR_OID, NAME_OID, CHAR_OID, UUID_OID, JSON_OID, JSONB_OID,
    XML_OID, INET_OID, CIDR_OID, MACADDR_OID, MACADDR8_OID,
})
_BINARY_MODES = {"bytes": BYTEA_BASE64, "base64": BYTEA_BASE64,
                 "base64-url-safe": BYTEA_BASE64_URL, "hex": BYTEA_HEX}


def _numeric(t: PgType, modes: TypeModes) -> ColumnKind:
    mode = modes.decimal_handling_mode
    if mode == DOUBLE:
        return PER_VALUE  # a double's JSON is orjson's float formatting: the converter's job
    ps = numeric_precision_scale(t.typmod)
    scale = None if ps is None else max(ps[1], 0)
    if ps is not None and ps[1] < 0:
        return PER_VALUE  # NUMERIC(p, -s): values quantized by the converter
    if mode == STRING_MODE:
        return ColumnKind(DECIMAL_STRING, -1 if scale is None else scale)
    return ColumnKind(VSD) if scale is None else ColumnKind(DECIMAL, scale)


def column_kind(t: PgType, modes: TypeModes) -> ColumnKind:
    """The kernel of a column of type `t` under `modes` (FALLBACK: the per-value converter)."""
    if t.element is not None:
        return PER_VALUE
    oid = t.oid
    if oid in (INT2_OID, INT4_OID, INT8_OID, OID_OID):
        return ColumnKind(INT)
    if oid in _TEXT_OIDS:
        return ColumnKind(STRING)
    if oid == BOOL_OID:
        return ColumnKind(BOOL)
    if oid == NUMERIC_OID:
        return _numeric(t, modes)
    mode = modes.time_precision_mode
    if oid == DATE_OID:
        return ColumnKind(DATE)
    if oid == TIME_OID:
        micros = time_is_micros(temporal_precision(t.typmod), mode)
        return ColumnKind(TIME_MICROS if micros else TIME_MILLIS)
    if oid == TIMESTAMP_OID:
        micros = timestamp_is_micros(temporal_precision(t.typmod), mode)
        return ColumnKind(TIMESTAMP_MICROS if micros else TIMESTAMP_MILLIS)
    if oid == TIMESTAMPTZ_OID:
        return ColumnKind(ZONED_TIMESTAMP, temporal_precision(t.typmod))
    if oid == BYTEA_OID:
        return ColumnKind(BYTEA, _BINARY_MODES[modes.binary_handling_mode])
    if t.kind == "e":  # enums: the label as is
        return ColumnKind(STRING)
    return PER_VALUE


@functools.cache
def kernels_installed() -> bool:
    """Whether the compiled kernels (`headwater.connectors.postgres._copykernels`, C, built
    with the package) are there: without them a snapshot reads every table row-wise, which
    writes the same bytes, slower, and a WARNING says why, once per process."""
    try:
        from headwater.connectors.postgres import _copykernels  # noqa: F401
    except ImportError as exc:
        log.warning("snapshot step: every table row-wise: the column-wise snapshot's compiled "
                    "kernels headwater.connectors.postgres._copykernels are not built (%s); "
                    "build them with `pip install -e .` (scripts/setup.sh) or `python setup.py "
                    "build_ext --inplace` in the repository", exc)
        return False
    return True
