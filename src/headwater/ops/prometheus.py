"""Prometheus text exposition of Debezium's metrics, named as Debezium's monitoring example
exports its JMX beans.

Debezium's example runs the JMX exporter with the rule

    pattern: "debezium.([^:]+)<type=connector-metrics, context=([^,]+), server=([^>]+)>([^:]+)"
    name: "debezium_metrics_$4"
    labels: {plugin: "$1", context: "$2", name: "$3"}

so a dashboard built for Debezium queries `debezium_metrics_QueueRemainingCapacity{context=
"streaming", name="<topic.prefix>", plugin="postgres"}`.  The same names come out here.  As
with the JMX exporter, only numbers and booleans (1/0) are exported; strings are not; a map
(`RowsScanned`) becomes one sample per key, labelled `table`.

Why no prometheus_client: the exposition format is a few lines of text, and the values are
snapshots read from the workers' reports, not live collectors in this process.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

PREFIX = "debezium_metrics_"


@dataclass
class Exposition:
    """Samples grouped per metric family (one HELP/TYPE header each, as the format wants)."""

    _families: dict[str, tuple[str, str, list[str]]] = field(default_factory=dict)

    def add(self, name: str, labels: Mapping[str, str], value: float, *,
            help_text: str = "", kind: str = "gauge") -> None:
        fam = self._families.setdefault(name, (help_text or name, kind, []))
        fam[2].append(f"{name}{_labels(labels)} {_number(value)}")

    def add_debezium(self, attributes: Mapping[str, object], labels: Mapping[str, str]) -> None:
        """One Debezium MBean's attributes (context, name and plugin in `labels`)."""
        for attr, value in attributes.items():
            name = PREFIX + attr
            if isinstance(value, bool):
                self.add(name, labels, 1.0 if value else 0.0, help_text=f"Debezium {attr}")
            elif isinstance(value, int | float):
                self.add(name, labels, float(value), help_text=f"Debezium {attr}")
            elif isinstance(value, Mapping):
                for key, v in value.items():
                    if isinstance(v, int | float) and not isinstance(v, bool):
                        self.add(name, {**labels, "table": str(key)}, float(v),
                                 help_text=f"Debezium {attr}")

    def render(self) -> str:
        out: list[str] = []
        for name, (help_text, kind, samples) in self._families.items():
            out.append(f"# HELP {name} {_escape_help(help_text)}")
            out.append(f"# TYPE {name} {kind}")
            out.extend(samples)
        return "\n".join(out) + "\n"


def _labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if value == int(value) else repr(value)


def parse(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """The samples of an exposition (for tests and the console): {(name, labels): value}."""
    out: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, _, rest = head.partition("{")
        labels: list[tuple[str, str]] = []
        for part in _split_labels(rest.rstrip("}")):
            k, _, v = part.partition("=")
            labels.append((k, v.strip('"').replace('\\"', '"').replace("\\\\", "\\")))
        out[(name, frozenset(labels))] = float(value)
    return out


def _split_labels(body: str) -> Iterable[str]:
    part, quoted, escaped = "", False, False
    for ch in body:
        if ch == "," and not quoted:
            yield part
            part = ""
            continue
        part += ch
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"':
            quoted = not quoted
    if part:
        yield part
