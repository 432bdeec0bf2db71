"""Kafka's Java default partitioner for keyed records, in pure Python.

Why here: events must land in the partition a Java producer (Kafka Connect running Debezium)
would choose, so that consumers keyed on partitions (and compacted topics) see the same layout.
librdkafka's `murmur2_random` partitioner is documented to match it for non-null keys; this
reference implementation lets the tests check that instead of trusting it.
"""

from __future__ import annotations

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2` (seed 0x9747b28c) as a signed 32-bit int."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    for i in range(0, length - length % 4, 4):
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    rest = length % 4
    tail = length - rest
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: bytes, partitions: int) -> int:
    """`Utils.toPositive(Utils.murmur2(key)) % numPartitions`, the Java default for a key."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions
