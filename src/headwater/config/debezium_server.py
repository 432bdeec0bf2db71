"""What a Debezium Server file says beyond its connector: the sink and the event format.

Why checked: the loader keeps `debezium.sink.*` and `debezium.format.*` for pass-through
(config/loader.py), and nothing read them, so `debezium.sink.type=pubsub` with
`debezium.format.value=avro` ran and wrote JSON to the local topic log.  Headwater's own
destinations are the local topic log and Kafka (`headwater.topics.store=kafka`), its formats
the converters (`value.converter`); each Debezium Server setting is honoured through those or
refused here, naming the Headwater property that does the job.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

_SINK_TYPE: Final = "debezium.sink.type"
_FORMATS: Final = {"debezium.format.key": "key.converter",
                   "debezium.format.value": "value.converter",
                   "debezium.format.header": "header.converter"}
_DESTINATIONS: Final = ("the local topic log (headwater.topics.dir) or Kafka "
                        "(headwater.topics.store=kafka with bootstrap.servers)")


def server_problems(props: Mapping[str, str]) -> list[str]:
    """Problems with the `debezium.*` keys a Debezium Server file leaves (empty: none)."""
    problems: list[str] = []
    sink = props.get(_SINK_TYPE, "").strip()
    store = props.get("headwater.topics.store", "local").strip().lower()
    if sink and sink != "kafka":
        problems.append(f"{_SINK_TYPE}: {sink!r} is a Debezium Server sink Headwater does not "
                        f"have; its events go to {_DESTINATIONS}: remove debezium.sink.*")
    elif sink == "kafka" and store != "kafka":
        problems.append(f"{_SINK_TYPE}: 'kafka', but headwater.topics.store is {store!r}: set "
                        "headwater.topics.store=kafka and bootstrap.servers, or remove "
                        f"{_SINK_TYPE} (the events would go to the local topic log)")
    for key in sorted(props):
        if not key.startswith("debezium.") or key == _SINK_TYPE:
            continue
        if key in _FORMATS:
            value = props[key].strip().lower()
            if value != "json":
                problems.append(f"{key}: {props[key]!r} is not honoured (only json is); set "
                                f"{_FORMATS[key]} instead (e.g. "
                                "io.confluent.connect.avro.AvroConverter with "
                                f"{_FORMATS[key]}.schema.registry.url for Avro)")
            continue
        problems.append(f"{key}: a Debezium Server setting Headwater does not read; remove it "
                        f"(the events go to {_DESTINATIONS}; Kafka clients take "
                        "bootstrap.servers, producer.* and consumer.*)")
    return problems
