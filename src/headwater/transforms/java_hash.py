"""Java's `Object.hashCode` of Connect values and Debezium's `MurmurHash3.hash(Object)`.

`PartitionRouting` must choose the partition Debezium chooses, and Debezium hashes the Java
objects a Connect struct holds: `Long`, `Integer`, `Float`, `String`, `ByteBuffer`,
`java.util.Date` (Kafka's Timestamp/Date/Time), `BigDecimal` (Kafka's Decimal).  Which object
a Python value stands for depends on its schema, so both functions take the schema.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import struct
from typing import Any

from headwater.connect.record import TransformError
from headwater.model.schema import ConnectSchema

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF
_DECIMAL = "org.apache.kafka.connect.data.Decimal"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def int32(v: int) -> int:
    """Java's `(int)` of a wider value: the low 32 bits, signed."""
    v &= _M32
    return v - (1 << 32) if v & 0x80000000 else v


def _long_hash(v: int) -> int:
    v &= _M64
    return int32(v ^ (v >> 32))


def string_hash(s: str) -> int:
    """`String.hashCode` over the UTF-16 code units."""
    h = 0
    units = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & _M32
    return int32(h)


def _bytes_hash(b: bytes) -> int:
    """`ByteBuffer.hashCode`: from the last byte to the first, bytes signed."""
    h = 1
    for x in reversed(b):
        h = (31 * h + (x - 256 if x > 127 else x)) & _M32
    return int32(h)


def _big_integer_hash(v: int) -> int:
    """`BigInteger.hashCode`: over the big-endian 32-bit words of |v|, times the sign."""
    mag = abs(v)
    words = []
    while mag:
        words.append(mag & _M32)
        mag >>= 32
    h = 0
    for w in reversed(words):
        h = (31 * h + w) & _M32
    return int32(h * (1 if v > 0 else -1 if v < 0 else 0))


def _epoch_millis(value: Any) -> int:
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return (moment - _EPOCH) // dt.timedelta(milliseconds=1)
    if isinstance(value, dt.date):
        return (value - _EPOCH.date()).days * 86_400_000
    if isinstance(value, dt.time):
        return (value.hour * 3600 + value.minute * 60 + value.second) * 1000 \
            + value.microsecond // 1000
    raise TypeError(type(value).__name__)


def java_hash_code(schema: ConnectSchema | None, value: Any, what: str) -> int:
    """`value.hashCode()` of the Java object Kafka Connect holds for (schema, value)."""
    kind = schema.type if schema is not None else None
    if schema is not None and schema.name == _DECIMAL and isinstance(value, decimal.Decimal):
        scale = int((schema.parameters or {}).get("scale", "0"))
        unscaled = int(value.scaleb(scale))
        return int32(31 * _big_integer_hash(unscaled) + scale)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return _long_hash(_epoch_millis(value))
    if isinstance(value, bool):
        return 1231 if value else 1237
    if isinstance(value, str):
        return string_hash(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _bytes_hash(bytes(value))
    if isinstance(value, int) and kind in ("int8", "int16", "int32"):
        return int32(value)
    if isinstance(value, int) and kind in ("int64", None):
        return _long_hash(value)
    if isinstance(value, float) and kind == "float32":
        bits = 0x7FC00000 if math.isnan(value) else struct.unpack(">I", struct.pack(">f", value))[0]
        return int32(bits)
    if isinstance(value, float) and kind in ("float64", None):
        bits = (0x7FF8000000000000 if math.isnan(value)
                else struct.unpack(">Q", struct.pack(">d", value))[0])
        return _long_hash(bits)
    raise TransformError(
        f"PartitionRouting: cannot hash {what} ({kind or type(value).__name__}): only "
        "primitive, string, bytes, Decimal and Kafka temporal values have a Java hash Headwater "
        "reproduces")


# -- Debezium's io.debezium.util.MurmurHash3 (x64, 64-bit result, seed 9001) -----------------

def _rotl(k: int, r: int) -> int:
    return ((k << r) | (k >> (64 - r))) & _M64


def _fmix(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & _M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & _M64
    k ^= k >> 33
    return k


class _State:
    __slots__ = ("c1", "c2", "h1", "h2", "k1", "k2")

    def __init__(self, seed: int) -> None:
        self.h1 = 0x9368E53C2F6AF274 ^ seed
        self.h2 = 0x586DCD208F7CD3FD ^ seed
        self.c1 = 0x87C37B91114253D5
        self.c2 = 0x4CF5AD432745937F
        self.k1 = 0
        self.k2 = 0

    def bmix(self) -> None:
        self.k1 = (self.k1 * self.c1) & _M64
        self.k1 = _rotl(self.k1, 23)
        self.k1 = (self.k1 * self.c2) & _M64
        self.h1 ^= self.k1
        self.h1 = (self.h1 + self.h2) & _M64
        self.h2 = _rotl(self.h2, 41)
        self.k2 = (self.k2 * self.c2) & _M64
        self.k2 = _rotl(self.k2, 23)
        self.k2 = (self.k2 * self.c1) & _M64
        self.h2 ^= self.k2
        self.h2 = (self.h2 + self.h1) & _M64
        self.h1 = (self.h1 * 3 + 0x52DCE729) & _M64
        self.h2 = (self.h2 * 3 + 0x38495AB5) & _M64
        self.c1 = (self.c1 * 5 + 0x7B7D159C) & _M64
        self.c2 = (self.c2 * 5 + 0x6BCE6396) & _M64


def murmur3_x64_64(key: bytes, seed: int = 9001) -> int:
    """`MurmurHash3_x64_64(byte[], seed)` as an unsigned 64-bit value (tail bytes signed, as
    Java's `(long) key[i]` sign-extends them)."""
    s = _State(seed)
    n = len(key)
    for i in range(n // 16):
        s.k1 = int.from_bytes(key[i * 16:i * 16 + 8], "little")
        s.k2 = int.from_bytes(key[i * 16 + 8:i * 16 + 16], "little")
        s.bmix()
    s.k1 = 0
    s.k2 = 0
    tail = n - n % 16
    rest = n & 15
    if rest:
        for j in range(rest - 1, -1, -1):
            b = key[tail + j]
            signed = (b - 256 if b > 127 else b) & _M64
            shifted = (signed << (8 * (j % 8))) & _M64
            if j >= 8:
                s.k2 ^= shifted
            else:
                s.k1 ^= shifted
        s.bmix()
    s.h2 ^= n
    s.h1 = (s.h1 + s.h2) & _M64
    s.h2 = (s.h2 + s.h1) & _M64
    s.h1 = _fmix(s.h1)
    s.h2 = _fmix(s.h2)
    s.h1 = (s.h1 + s.h2) & _M64
    return s.h1


def murmur_hash(schema: ConnectSchema | None, value: Any, what: str) -> int:
    """Debezium's `MurmurHash3.hash(Object)`: a String by its UTF-8 bytes, anything else by
    its Java hashCode's four little-endian bytes."""
    if isinstance(value, str):
        data = value.encode("utf-8", "replace")
    else:
        data = struct.pack("<i", java_hash_code(schema, value, what))
    return int32(murmur3_x64_64(data) >> 32)
