"""One Kafka partition's range read straight into Arrow columns, with no Python object per
record: the compiled reader `headwater.kafka._rangeread` (C, built by setup.py) over the
librdkafka that confluent-kafka loaded.

Why: an executor's slice read with confluent-kafka's `consume` (`consume.read_range`) made a
Message and two bytes objects per record, then joined them into Arrow buffers again; measured
in one process (`bench/kafka_part_cost.py`, 200k events of 3.4 KB) that read cost 0.87 s of
CPU above the local log's whole part.  The compiled reader copies each record's key and value
once, from librdkafka's fetch buffers into the column buffers.

Same records and same checks as `read_range`: [start, stop) of one partition in offset order,
offsets only going up (a compacted or transactional gap is fine, a repeat or a step back
raises), an end short of `stop` raises (records removed), transient errors are ridden through
(`consume.transient`), no progress within `timeout` raises; keys and values null where the
record's are (tombstones, null keys).  Headers are not read (the decoders do not use them).

`available()` says whether the compiled reader can be used: the module built and librdkafka
found (the one this process loaded for confluent-kafka, else the wheel's bundled copy).  When
it cannot, the callers read with confluent-kafka as before (the same records), and a WARNING
says why, once.
"""

from __future__ import annotations

import functools
import glob
import logging
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from headwater.kafka.consume import KafkaReadError, end_offsets, transient

if TYPE_CHECKING:
    from headwater.kafka._rangeread import Column, Reader

log = logging.getLogger("headwater.kafka.columns")

_POLL_MS = 200
# records per chunk given back (a chunk's cut costs the decoder a step of its own)
CHUNK = 8192


def librdkafka_path() -> str | None:
    """The librdkafka shared library confluent-kafka uses: the one mapped into this process
    once confluent_kafka is imported (the wheel's bundled copy or the system's), else the
    wheel's bundled copy on disk; None when neither is found."""
    import confluent_kafka

    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if "librdkafka" in os.path.basename(path) and os.path.isfile(path):
                    return path
    except OSError:
        pass
    libs = Path(confluent_kafka.__file__).parent.parent / "confluent_kafka.libs"
    found = sorted(glob.glob(str(libs / "librdkafka*.so*")))
    return found[0] if found else None


@functools.cache
def _module() -> ModuleType | None:
    try:
        from headwater.kafka import _rangeread
    except ImportError as exc:
        log.warning("Kafka reads: confluent-kafka's per-record reader, the slower one: the "
                    "compiled range reader headwater.kafka._rangeread is not built (%s); build "
                    "it with `pip install -e .` (scripts/setup.sh) or `python setup.py "
                    "build_ext --inplace` in the repository", exc)
        return None
    path = librdkafka_path()
    if path is None:
        log.warning("Kafka reads: confluent-kafka's per-record reader, the slower one: "
                    "librdkafka's shared library was not found for the compiled range reader")
        return None
    try:
        version = _rangeread.load(path)
    except OSError as exc:
        log.warning("Kafka reads: confluent-kafka's per-record reader, the slower one: %s", exc)
        return None
    log.debug("Kafka reads: the compiled range reader over librdkafka %s (%s)", version, path)
    return _rangeread


def available() -> bool:
    """Whether `read_columns` can be used (else read with confluent-kafka)."""
    return _module() is not None


def read_columns(config: Mapping[str, str], topic: str, partition: int, start: int,
                 stop: int, timeout: float = 120.0, chunk: int = CHUNK
                 ) -> Iterator[tuple[np.ndarray, pa.Array, pa.Array]]:
    """The records of [start, stop) of one partition, in chunks of at least `chunk` records
    (the last one smaller): (offsets int64, keys, values large_binary with nulls), in offset
    order; `config` the consumer's librdkafka settings.  RuntimeError when the compiled
    reader is not available (`available`)."""
    return RangeRead(config, topic, partition, start, stop, timeout).chunks(chunk)


class RangeRead:
    """A range being read: librdkafka fetches it in its own threads from the moment this is
    made (up to its queue's limits, `queued.min.messages`, `queued.max.messages.kbytes`), so
    that a caller can open the next range before working on the current one; `chunks` gives
    the records, and closes it when they are all given (`close` otherwise)."""

    def __init__(self, config: Mapping[str, str], topic: str, partition: int, start: int,
                 stop: int, timeout: float = 120.0) -> None:
        module = _module()
        if module is None:
            raise RuntimeError("the compiled Kafka range reader is not available")
        callables = sorted(k for k, v in config.items() if not isinstance(v, str))
        if callables:
            raise ValueError(f"read_columns: settings that are not librdkafka's strings: "
                             f"{callables}")
        self.config = dict(config)
        self.topic, self.partition, self.start, self.stop = topic, partition, start, stop
        self.timeout = timeout
        self.reader: Reader | None = None
        if stop > start:
            self.reader = module.Reader(sorted(self.config.items()), topic, partition, start,
                                        stop)

    def chunks(self, chunk: int = CHUNK) -> Iterator[tuple[np.ndarray, pa.Array, pa.Array]]:
        reader = self.reader
        if reader is None:
            return
        topic, partition, stop, timeout = self.topic, self.partition, self.stop, self.timeout
        deadline = time.monotonic() + timeout
        try:
            while reader.position < stop:
                added, errors, bad = reader.read(_POLL_MS)
                if bad >= 0:
                    raise KafkaReadError(f"{topic}[{partition}]: offsets out of order after "
                                         f"{reader.position}: [{bad}]...")
                if errors and _errors(self.config, topic, partition, stop, errors, timeout):
                    break  # (the end, at the stop: a transaction's marker last in the range)
                if added or errors:
                    deadline = time.monotonic() + timeout
                elif time.monotonic() > deadline:
                    raise KafkaReadError(f"no progress reading {topic}[{partition}] at offset "
                                         f"{reader.position} for {timeout:.0f}s")
                if reader.pending >= chunk:
                    yield _take(reader)
            if reader.pending:
                yield _take(reader)
        finally:
            self.close()

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None


def _take(reader: Reader) -> tuple[np.ndarray, pa.Array, pa.Array]:
    count, offsets, keys, values = reader.take()
    return (np.frombuffer(memoryview(offsets), np.int64), _binary(count, keys),
            _binary(count, values))


def _binary(count: int, column: Column) -> pa.Array:
    valid, ends, data, nulls = column
    return pa.Array.from_buffers(
        pa.large_binary(), count,
        [pa.py_buffer(valid) if nulls else None, pa.py_buffer(ends), pa.py_buffer(data)],
        nulls)


def _errors(config: Mapping[str, str], topic: str, partition: int, stop: int,
            errors: list[tuple[int, int, str]], timeout: float) -> bool:
    """Error messages of a read, as `consume._read_error` takes them: True when the
    partition's end was reached at or past `stop`; an end short of it is checked against the
    partition's real end (`_check_end`), a transient error passes, anything else raises."""
    from confluent_kafka import KafkaError

    done = False
    for code, offset, reason in errors:
        err = KafkaError(code, reason)
        if code == KafkaError._PARTITION_EOF:
            if offset < stop:
                _check_end(config, topic, partition, stop, timeout)
            else:
                done = True
            continue
        if transient(err):
            log.debug("reading %s[%d]: %s (the client recovers)", topic, partition, err)
            continue
        raise KafkaReadError(f"reading {topic}[{partition}]: {err}")
    return done


def _check_end(config: Mapping[str, str], topic: str, partition: int, stop: int,
               timeout: float) -> None:
    """A fetch reported an end before `stop`: short of it, records were removed (raises);
    at or past it, a new leader's watermark was catching up, and reading goes on."""
    from confluent_kafka import Consumer

    consumer = Consumer(dict(config))
    try:
        end = end_offsets(consumer, [(topic, partition)], timeout)[(topic, partition)]
    finally:
        consumer.close()
    if end < stop:
        raise KafkaReadError(
            f"{topic}[{partition}] ends at offset {end}, before {stop}: records were removed "
            "(retention, a recreated topic)")
