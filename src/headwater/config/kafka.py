"""Kafka client settings from Kafka Connect's worker property names.

Why Connect's names: a Debezium user already has a worker configuration (`bootstrap.servers`,
`security.protocol`, `sasl.jaas.config`, `producer.*` overrides, `topic.creation.*`), and the
same file should drive Headwater.  librdkafka (through confluent-kafka) speaks the same protocol
but names some settings differently and has no JAAS; this module translates, and refuses what
it cannot translate rather than dropping it (accepted-but-ignored configuration is a bug).

Everything here is read from the connector configuration's pass-through keys (see
`KAFKA_PREFIXES`), validated by `kafka_settings`, which raises ConfigError listing every
problem.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from headwater.config.loader import ConfigError

# Pass-through namespaces of the connector configurations that this module owns.
KAFKA_PREFIXES: Final = (
    "headwater.topics.store.", "bootstrap.servers.", "producer.", "consumer.", "topic.creation.",
    "security.protocol.", "sasl.", "ssl.", "signal.kafka.", "signal.consumer.",
)

STORES: Final = ("local", "kafka")

# Java client names that librdkafka knows under the same name and meaning.
_SAME: Final = frozenset({
    "client.id", "linger.ms", "batch.size", "compression.type", "retries", "retry.backoff.ms",
    "request.timeout.ms", "delivery.timeout.ms", "max.in.flight.requests.per.connection",
    "enable.idempotence", "acks", "metadata.max.age.ms", "socket.connection.setup.timeout.ms",
    "reconnect.backoff.ms", "reconnect.backoff.max.ms", "retry.backoff.max.ms",
    "ssl.endpoint.identification.algorithm", "ssl.keystore.location", "ssl.keystore.password",
    "ssl.key.password", "ssl.cipher.suites", "sasl.mechanism", "sasl.kerberos.service.name",
    "security.protocol", "session.timeout.ms", "heartbeat.interval.ms", "fetch.min.bytes",
    "fetch.max.bytes", "max.partition.fetch.bytes", "fetch.max.wait.ms",
    "receive.buffer.bytes", "send.buffer.bytes", "connections.max.idle.ms",
})
# Java names with a different librdkafka name (value unchanged).
_RENAMED: Final = {
    "max.request.size": "message.max.bytes",
    "ssl.truststore.certificates": "ssl.ca.pem",
    "ssl.keystore.certificate.chain": "ssl.certificate.pem",
    "ssl.keystore.key": "ssl.key.pem",
    "ssl.enabled.protocols": "ssl.protocols",  # not in every build; librdkafka reports it
}
_JAAS: Final = re.compile(
    r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)\s*(?P<opts>.*?);?\s*$",
    re.S)
_JAAS_OPT: Final = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|(\S+?))(?=\s|;|$)')
_PLAIN_MODULES: Final = ("org.apache.kafka.common.security.plain.PlainLoginModule",
                         "org.apache.kafka.common.security.scram.ScramLoginModule")


def parse_jaas(text: str) -> tuple[str, str]:
    """(username, password) of a PlainLoginModule/ScramLoginModule `sasl.jaas.config`.

    librdkafka has no JAAS; those two modules only carry the credentials, which it takes as
    `sasl.username`/`sasl.password`.  Other login modules (Kerberos, OAuth) raise ValueError."""
    match = _JAAS.match(text)
    if match is None:
        raise ValueError("not a JAAS entry '<LoginModule> required key=\"value\" ...;'")
    if match["module"] not in _PLAIN_MODULES:
        raise ValueError(f"login module {match['module']} is not supported (PlainLoginModule "
                         "and ScramLoginModule are)")
    options = {m[1]: (m[2].replace('\\"', '"').replace("\\\\", "\\") if m[2] is not None
                      else m[3]) for m in _JAAS_OPT.finditer(match["opts"])}
    if "username" not in options or "password" not in options:
        raise ValueError("the JAAS entry needs username and password options")
    return options["username"], options["password"]


def client_config(props: Mapping[str, str], errors: list[str], where: str = ""
                  ) -> dict[str, str]:
    """librdkafka settings for Java client properties (`where` names their prefix)."""
    out: dict[str, str] = {}
    for name, value in props.items():
        label = f"{where}{name}"
        if name == "sasl.jaas.config":
            try:
                out["sasl.username"], out["sasl.password"] = parse_jaas(value)
            except ValueError as exc:
                errors.append(f"{label}: {exc}")
        elif name == "ssl.truststore.location":
            if props.get("ssl.truststore.type", "JKS").upper() != "PEM":
                errors.append(f"{label}: librdkafka reads PEM trust stores only; set "
                              "ssl.truststore.type=PEM (JKS is not supported)")
            out["ssl.ca.location"] = value
        elif name in ("ssl.truststore.type", "ssl.keystore.type"):
            if name == "ssl.keystore.type" and value.upper() != "PKCS12":
                errors.append(f"{label}: librdkafka reads PKCS12 key stores only")
        elif name == "buffer.memory":
            try:
                out["queue.buffering.max.kbytes"] = str(max(1, int(value) // 1024))
            except ValueError:
                errors.append(f"{label}: expected a number of bytes, got {value!r}")
        elif name in _SAME:
            out[name] = value
        elif name in _RENAMED:
            out[_RENAMED[name]] = value
        else:
            errors.append(f"{label}: no librdkafka equivalent is known; remove it")
    return out


@dataclass(frozen=True, slots=True)
class TopicCreationGroup:
    """One `topic.creation.<group>.*` group: which topics it covers and how they are made."""

    name: str
    include: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]
    partitions: int | None
    replication_factor: int | None
    configs: Mapping[str, str]

    def matches(self, topic: str) -> bool:
        return (any(p.fullmatch(topic) for p in self.include)
                and not any(p.fullmatch(topic) for p in self.exclude))


@dataclass(frozen=True, slots=True)
class TopicCreation:
    """Kafka Connect's topic creation rules (KIP-158): the first listed group whose include
    regexes match (and exclude do not) supplies partitions, replication factor and topic
    configs; `default` covers the rest and must give partitions and replication factor."""

    enabled: bool = True
    groups: tuple[TopicCreationGroup, ...] = ()
    default: TopicCreationGroup = TopicCreationGroup("default", (), (), None, None, {})

    def for_topic(self, topic: str) -> tuple[int, int, dict[str, str]]:
        for group in self.groups:
            if group.matches(topic):
                return (group.partitions or self.default.partitions or 1,
                        group.replication_factor or self.default.replication_factor or -1,
                        {**self.default.configs, **group.configs})
        return (self.default.partitions or 1, self.default.replication_factor or -1,
                dict(self.default.configs))


def _int(text: str, label: str, errors: list[str], minimum: int = 1) -> int | None:
    try:
        value = int(text)
    except ValueError:
        errors.append(f"{label}: expected an integer, got {text!r}")
        return None
    if value < minimum and value != -1:
        errors.append(f"{label}: expected an integer >= {minimum} (or -1), got {value}")
        return None
    return value


def _regexes(text: str, label: str, errors: list[str]) -> tuple[re.Pattern[str], ...]:
    out = []
    for part in (p.strip() for p in text.split(",")):
        if part:
            try:
                out.append(re.compile(part))
            except re.error as exc:
                errors.append(f"{label}: {part!r} is not a regular expression ({exc})")
    return tuple(out)


def _group(name: str, props: Mapping[str, str], errors: list[str]) -> TopicCreationGroup:
    prefix = f"topic.creation.{name}."
    own = {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)}
    partitions = own.pop("partitions", None)
    replication = own.pop("replication.factor", None)
    include = own.pop("include", "")
    exclude = own.pop("exclude", "")
    if name != "default" and not include:
        errors.append(f"{prefix}include: required (regular expressions of the group's topics)")
    return TopicCreationGroup(
        name, _regexes(include, prefix + "include", errors),
        _regexes(exclude, prefix + "exclude", errors),
        None if partitions is None else _int(partitions, prefix + "partitions", errors),
        None if replication is None else _int(replication, prefix + "replication.factor",
                                              errors),
        own)


def topic_creation(props: Mapping[str, str], errors: list[str]) -> TopicCreation:
    enabled = props.get("topic.creation.enable", "true").lower()
    if enabled not in ("true", "false"):
        errors.append(f"topic.creation.enable: expected true or false, got {enabled!r}")
    names = [g.strip() for g in props.get("topic.creation.groups", "").split(",") if g.strip()]
    known = {"enable", "groups"}
    for key in props:
        if key.startswith("topic.creation.") and key[15:] not in known:
            group = key[15:].split(".", 1)[0]
            if group != "default" and group not in names:
                errors.append(f"{key}: group {group!r} is not listed in topic.creation.groups")
    default = _group("default", props, errors)
    groups = tuple(_group(n, props, errors) for n in names)
    if enabled == "true" and any(k.startswith("topic.creation.") for k in props) and (
            default.partitions is None or default.replication_factor is None):
        errors.append("topic.creation.default.partitions and "
                      "topic.creation.default.replication.factor are both required when "
                      "topic.creation.* is used (Kafka Connect's rule)")
    return TopicCreation(enabled == "true", groups, default)


@dataclass(frozen=True, slots=True)
class KafkaSettings:
    """The typed Kafka settings of one connector configuration."""

    store: str = "local"
    connector_name: str = ""
    common: Mapping[str, str] = field(default_factory=dict)  # bootstrap + security
    producer: Mapping[str, str] = field(default_factory=dict)  # producer.* overrides
    consumer: Mapping[str, str] = field(default_factory=dict)  # consumer.* overrides
    creation: TopicCreation = TopicCreation()
    offset_topic: str | None = None
    offset_partitions: int = 25
    offset_replication_factor: int = -1

    @property
    def uses_kafka(self) -> bool:
        return self.store == "kafka" or self.offset_topic is not None

    def producer_config(self) -> dict[str, str]:
        """The topic store's producer: idempotent, acks=all, Java's key partitioning; at most
        Java's default `buffer.memory` (32 MiB) of unacknowledged records unless set.  Batches
        of up to 50 ms compressed with lz4 unless set: with offsets stored after the acks
        (kafka.writer) a batch's wait costs no throughput, and fewer, smaller requests leave
        the brokers (each batch written three times) less to do; on the 2-core machine a
        first capture into a fresh cluster took 18.8 s so, 22.7 s with 5 ms uncompressed
        (two runs, not isolated from the machine's load: docs/kafka.md, Cost)."""
        return {**self.common, "linger.ms": "50", "compression.type": "lz4",
                "queue.buffering.max.kbytes": "32768", **self.producer,
                "enable.idempotence": "true", "acks": "all", "partitioner": "murmur2_random"}

    def consumer_config(self, group: str | None = None) -> dict[str, str]:
        conf = {**self.common, **self.consumer, "enable.auto.commit": "false",
                "enable.partition.eof": "true", "auto.offset.reset": "earliest"}
        conf["group.id"] = group or f"headwater-{self.connector_name or 'reader'}"
        return conf


_SECURITY: Final = ("security.protocol", "sasl.mechanism", "sasl.jaas.config")


def kafka_settings(passthrough: Mapping[str, str], connector_name: str) -> KafkaSettings:
    """The Kafka settings in a configuration's pass-through keys (ConfigError if invalid)."""
    errors: list[str] = []
    props = dict(passthrough)
    store = props.get("headwater.topics.store", "local").strip().lower()
    if store not in STORES:
        errors.append(f"headwater.topics.store: {store!r} is not one of {', '.join(STORES)}")
    common_src = {k: v for k, v in props.items()
                  if k in _SECURITY or k.startswith("ssl.")
                  or (k.startswith("sasl.") and k not in _SECURITY)}
    common = client_config(common_src, errors)
    bootstrap = props.get("bootstrap.servers", "").strip()
    if bootstrap:
        common["bootstrap.servers"] = bootstrap
    producer_src = {k[9:]: v for k, v in props.items() if k.startswith("producer.")}
    producer = client_config(producer_src, errors, "producer.")
    if producer.get("acks", "all") not in ("all", "-1"):
        errors.append("producer.acks: must be all (an event is acknowledged to the database "
                      "only once every in-sync replica has it)")
    if producer.get("enable.idempotence", "true").lower() != "true":
        errors.append("producer.enable.idempotence: must be true (retries must not reorder "
                      "or duplicate events)")
    consumer = client_config({k[9:]: v for k, v in props.items() if k.startswith("consumer.")},
                             errors, "consumer.")
    creation = topic_creation(props, errors)
    offset_topic = props.get("offset.storage.topic") or None
    offset_partitions = _int(props.get("offset.storage.partitions", "25"),
                             "offset.storage.partitions", errors) or 25
    offset_rf = _int(props.get("offset.storage.replication.factor", "-1"),
                     "offset.storage.replication.factor", errors) or -1
    settings = KafkaSettings(store, connector_name, common, producer, consumer, creation,
                             offset_topic, offset_partitions, offset_rf)
    kafka_keys = [k for k in props if k in ("bootstrap.servers", "security.protocol")
                  or k.startswith(("producer.", "consumer.", "topic.creation.", "sasl.", "ssl."))]
    if settings.uses_kafka and not bootstrap:
        errors.append("bootstrap.servers: required with headwater.topics.store=kafka or "
                      "offset.storage.topic")
    elif not settings.uses_kafka and kafka_keys:
        errors.append(f"{', '.join(sorted(kafka_keys))}: Kafka client settings, but nothing "
                      "uses Kafka (set headwater.topics.store=kafka or offset.storage.topic)")
    if errors:
        raise ConfigError(errors)
    return settings


# The Kafka signal channel's settings (the channel itself: headwater.engine.kafka_signals).
_OWN: Final = ("signal.kafka.topic", "signal.kafka.bootstrap.servers", "signal.kafka.groupId",
               "signal.kafka.poll.timeout.ms")


@dataclass(frozen=True, slots=True)
class KafkaSignalSettings:
    topic: str
    key: str  # topic.prefix: only messages with this key are signals for this connector
    consumer: Mapping[str, str] = field(default_factory=dict)  # librdkafka config
    poll_timeout_ms: int = 0


def kafka_signal_settings(passthrough: Mapping[str, str], topic_prefix: str
                          ) -> KafkaSignalSettings:
    """`signal.kafka.*` and `signal.consumer.*` (ConfigError listing every problem).  The
    cluster is `signal.kafka.bootstrap.servers`, else the connector's `bootstrap.servers`."""
    errors: list[str] = []
    for key in passthrough:
        if key.startswith("signal.kafka.") and key not in _OWN:
            errors.append(f"{key}: unknown (the Kafka signal channel has {', '.join(_OWN)})")
    bootstrap = (passthrough.get("signal.kafka.bootstrap.servers")
                 or passthrough.get("bootstrap.servers") or "").strip()
    if not bootstrap:
        errors.append("signal.kafka.bootstrap.servers: required with the kafka signal channel")
    timeout = passthrough.get("signal.kafka.poll.timeout.ms", "0")
    if not timeout.isdigit():
        errors.append(f"signal.kafka.poll.timeout.ms: expected an integer >= 0, got {timeout!r}")
    overrides = client_config({k[16:]: v for k, v in passthrough.items()
                               if k.startswith("signal.consumer.")}, errors, "signal.consumer.")
    if errors:
        raise ConfigError(errors)
    consumer = {"bootstrap.servers": bootstrap,
                "group.id": passthrough.get("signal.kafka.groupId", "kafka-signal"),
                **overrides, "enable.auto.commit": "false", "enable.partition.eof": "false",
                "auto.offset.reset": "earliest"}
    return KafkaSignalSettings(passthrough.get("signal.kafka.topic") or f"{topic_prefix}-signal",
                               topic_prefix, consumer, int(timeout))
