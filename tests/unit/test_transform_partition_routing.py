"""Debezium's PartitionRouting: the partitions of Debezium 3.x's
`debezium-connect-plugins/src/test/java/io/debezium/transforms/partitions/
PartitionRoutingTest.java` (each test names the Java test it follows), the Java hashes it
relies on, and where the chosen partition goes (Kafka producer; the local log refuses it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.connect.props import PluginConfigError
from headwater.connect.record import ConnectRecord, TransformError
from headwater.model.schema import FLOAT32, INT64, STRING, ConnectSchema
from headwater.model.topic import TopicRecord
from headwater.topics.log import PartitionRefused, TopicLog
from headwater.transforms.chain import build_chain
from headwater.transforms.java_hash import java_hash_code, murmur_hash, string_hash

from .smt_envelopes import envelope_record, envelope_schema, struct

CLS = "io.debezium.transforms.partitions.PartitionRouting"
ROW = struct(None, ("id", ConnectSchema(INT64, optional=False)),
             ("price", ConnectSchema(FLOAT32, optional=False)),
             ("product", ConnectSchema(STRING)))
SOURCE = struct("source", *((n, ConnectSchema(STRING, optional=False))
                            for n in ("connector", "db", "table")), optional=False)
SCHEMA = envelope_schema(ROW, SOURCE, "server1.inventory.product.Envelope")


def routed(props: dict[str, Any], row: dict[str, Any] | None, op: str = "c") -> ConnectRecord:
    chain = build_chain({"transforms": "p", "transforms.p.type": CLS,
                         **{f"transforms.p.{k}": str(v) for k, v in props.items()}})
    record = envelope_record(SCHEMA, op, row, {"connector": "mysql", "db": "inventory",
                                               "table": "products"}, "prefix.inventory.products")
    out = chain.apply(record)
    assert out is not None
    return out


def row(id_: int = 1, price: float = 1.0, name: str | None = "APPLE") -> dict[str, Any]:
    return {"id": id_, "price": price, "product": name}


def test_java_hashes() -> None:
    """The Java values the partitions below rest on ("orange".hashCode() is -1008851410)."""
    assert string_hash("orange") == -1008851410
    assert string_hash("") == 0
    assert java_hash_code(ConnectSchema(INT64), 1 << 40, "x") == 256
    assert java_hash_code(ConnectSchema("boolean"), True, "x") == 1231
    assert java_hash_code(ConnectSchema(FLOAT32), 1.0, "x") == 0x3F800000


def test_default_java_hash() -> None:
    """byDefaultJavaHashIsUsed: change.id + change.product over 100 partitions is 39."""
    out = routed({"partition.payload.fields": "change.id, change.product",
                  "partition.topic.num": 100}, row(name="orange"))
    assert out.partition == 39


def test_murmur_hash() -> None:
    """murmurHashWillBeUsed: the same fields with murmur give 65."""
    out = routed({"partition.payload.fields": "change.id, change.product",
                  "partition.topic.num": 100, "partition.hash.function": "murmur"},
                 row(name="orange"))
    assert out.partition == 65
    assert murmur_hash(None, "orange", "x") != java_hash_code(None, "orange", "x")


@pytest.mark.parametrize(("fields", "op"), [("change . product", "c"), ("after.product", "c"),
                                            ("change.product", "c"), ("change.product", "d")])
def test_apple_goes_to_partition_zero(fields: str, op: str) -> None:
    """spaceBetweenNestedFiledSeparatedWillBeCorrectManaged /
    correctComputeKafkaPartitionBasedOnNewConfiguredFieldOnCreateAndUpdateEvents /
    ...SpecialChangeNestedFieldOnCreateEvent / ...OnCreateDelete."""
    out = routed({"partition.payload.fields": fields, "partition.topic.num": 2}, row(), op)
    assert out.partition == 0


def test_only_existing_fields_count() -> None:
    """onlyFieldThatExistForCurrentEventWillBeUsedForPartitionComputation: 3 partitions, 1."""
    out = routed({"partition.payload.fields": "after.not_existing,change.product",
                  "partition.topic.num": 3}, row(name="orange"))
    assert out.partition == 1


def test_missing_or_null_fields_and_truncates_keep_the_record() -> None:
    """whenASpecifiedFieldIsNotFoundOnPayloadItWillBeIgnored /
    whenAnSpecifiedOptionalFieldIsNotFoundOnPayloadItWillBeIgnored /
    truncateOperationRecordWillBeSkipped."""
    assert routed({"partition.payload.fields": "after.not_existing",
                   "partition.topic.num": 2}, row()).partition is None
    assert routed({"partition.payload.fields": "change.product",
                   "partition.topic.num": 2}, row(name=None)).partition is None
    assert routed({"partition.payload.fields": "change.product",
                   "partition.topic.num": 2}, None, "t").partition is None


def test_top_level_field() -> None:
    """correctComputeKafkaPartitionBasedOnNotNestedField: `op` decides; creates agree."""
    props = {"partition.payload.fields": "op", "partition.topic.num": 2}
    c1 = routed(props, row(name="APPLE"))
    c2 = routed(props, row(name="ORANGE"))
    assert c1.partition == c2.partition == string_hash("c") % 2
    assert routed(props, row(), "u").partition == string_hash("u") % 2


def test_path_through_a_null_struct_fails_as_in_debezium() -> None:
    with pytest.raises(TransformError, match="Unprocessable message"):
        routed({"partition.payload.fields": "after.product", "partition.topic.num": 2},
               row(), "d")


@pytest.mark.parametrize(("props", "message"), [
    ({"partition.topic.num": 2}, "transforms.p.partition.payload.fields: missing"),
    ({"partition.payload.fields": "2"}, "transforms.p.partition.topic.num: missing"),
    ({"partition.payload.fields": ",source.table", "partition.topic.num": 2},
     "transforms.p.partition.payload.fields: ',source.table' has an empty element"),
    ({"partition.payload.fields": "op", "partition.topic.num": 0},
     "transforms.p.partition.topic.num: '0' is not a positive integer"),
    ({"partition.payload.fields": "op", "partition.topic.num": "two"},
     "transforms.p.partition.topic.num: 'two' is not an integer"),
    ({"partition.payload.fields": "op", "partition.topic.num": 2,
      "partition.hash.function": "md5"},
     "transforms.p.partition.hash.function: 'md5' is not one of java, murmur"),
])
def test_config_errors(props: dict[str, Any], message: str) -> None:
    """whenNoPartitionPayloadFieldDeclared... / whenNoPartitionTopicNumFieldDeclared... /
    whenPartitionPayloadFieldContainsEmptyElement..."""
    with pytest.raises(PluginConfigError) as info:
        build_chain({"transforms": "p", "transforms.p.type": CLS,
                     **{f"transforms.p.{k}": str(v) for k, v in props.items()}})
    assert message in str(info.value)


def test_local_topic_log_refuses_another_partition(tmp_path: Path) -> None:
    with TopicLog(tmp_path) as log:
        assert log.append({"t": [TopicRecord(b"1", b"{}", 1, (), 0)]}) == {"t": (0, 0)}
        with pytest.raises(PartitionRefused, match="partition 1 chosen by a transform"):
            log.append({"t": [TopicRecord(b"2", b"{}", 2, (), 1)]})
        assert log.append({"t": [TopicRecord(b"3", b"{}", 3)]}) == {"t": (1, 1)}


def test_start_refuses_partitions_on_the_local_log() -> None:
    from types import SimpleNamespace

    from headwater.capture import refuse_partitions_on_the_local_log
    from headwater.config.loader import ConfigError

    props = {"transforms": "p", "transforms.p.type": CLS,
             "transforms.p.partition.payload.fields": "op",
             "transforms.p.partition.topic.num": "3"}
    cfg = SimpleNamespace(passthrough=props)
    with pytest.raises(ConfigError,
                       match=r"transforms\.p\.partition\.topic\.num=3: PartitionRouting"):
        refuse_partitions_on_the_local_log(cfg, "local")
    refuse_partitions_on_the_local_log(cfg, "kafka")
    from headwater.config.output import FILES, OutputConfig

    files = SimpleNamespace(passthrough=props, output=OutputConfig(destination=FILES))
    with pytest.raises(ConfigError, match="files destination"):
        refuse_partitions_on_the_local_log(files, "kafka")
    cfg.passthrough = {**props, "transforms.p.partition.topic.num": "1"}
    refuse_partitions_on_the_local_log(cfg, "local")
