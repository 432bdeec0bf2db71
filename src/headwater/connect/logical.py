"""Kafka Connect's logical types (Date, Time, Timestamp, Decimal): their schema names and the
integers their values are carried as.

Why here, beside the record model: converters, transforms (TimestampConverter, Cast) and
formats all need them, and a transform must not depend on the converters' package.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
DATE = "org.apache.kafka.connect.data.Date"
TIME = "org.apache.kafka.connect.data.Time"
DECIMAL = "org.apache.kafka.connect.data.Decimal"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_DATE = dt.date(1970, 1, 1)


def epoch_millis(value: dt.datetime) -> int:
    """Kafka `Timestamp` as a long: a naive datetime is UTC (java.util.Date has no zone)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    delta = value - _EPOCH
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000


def epoch_days(value: dt.date) -> int:
    return (value - _EPOCH_DATE).days


def millis_of_day(value: dt.time) -> int:
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000


def logical_to_int(value: Any) -> Any:
    """Kafka's Date/Time/Timestamp values as the integers their Connect schemas carry."""
    if isinstance(value, dt.datetime):
        return epoch_millis(value)
    if isinstance(value, dt.date):
        return epoch_days(value)
    if isinstance(value, dt.time):
        return millis_of_day(value)
    return value
