"""What the pipeline can do, as data: every reader x event model x target x mode, supported or
refused with its reason.

One table decides; the pipeline asks it once, at start (`require`, from `config` and
`runner.start`), so an unsupported combination is one error naming the combination and the
reason, never a failed batch half-way through a run.  The few places that still learn a
topic's event model from its records (a configuration that names neither `connector.class`
nor `headwater.event.format`) ask the same table, so the message is the same.

`REFUSALS` lists what does not work; a cell no rule matches is supported.  A rule's `None`
matches every value of its dimension.  The first matching rule gives the reason.
`docs/pipeline.md`'s capability table is `markdown_table()` (tests/unit/test_capabilities.py
checks the two agree).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import product
from typing import Final

# Readers: `headwater.pipeline.source` and `headwater.topics.store`.
TOPICS: Final = "topics"
KAFKA: Final = "kafka"
FILES: Final = "datastream-files"
READERS: Final = (TOPICS, KAFKA, FILES)

# Event models: decided from the configuration (`event_model`), never from a topic's records.
ROWS: Final = "debezium"
DATASTREAM: Final = "datastream"
DOCUMENTS: Final = "documents"
MODELS: Final = (ROWS, DATASTREAM, DOCUMENTS)

# Targets: `headwater.pipeline.target`, Delta split by `headwater.pipeline.delta.writer`.
DELTA_RS: Final = "delta-rs"
DELTA_SPARK: Final = "delta-spark"
ICEBERG: Final = "iceberg"
JDBC: Final = "jdbc"
TARGETS: Final = (DELTA_RS, DELTA_SPARK, ICEBERG, JDBC)

MODES: Final = ("scd1", "scd2", "changelog")

READER_NAMES: Final = {
    TOPICS: "the topic log (headwater.topics.store=local)",
    KAFKA: "Kafka (headwater.topics.store=kafka)",
    FILES: "Datastream files (headwater.pipeline.source=datastream-files)",
}
MODEL_NAMES: Final = {
    ROWS: "Debezium rows",
    DATASTREAM: "Datastream events",
    DOCUMENTS: "MongoDB documents",
}
TARGET_NAMES: Final = {
    DELTA_RS: "Delta (headwater.pipeline.delta.writer=delta-rs)",
    DELTA_SPARK: "Delta (headwater.pipeline.delta.writer=spark)",
    ICEBERG: "Iceberg (headwater.pipeline.target=iceberg)",
    JDBC: "JDBC (headwater.pipeline.target=jdbc)",
}


@dataclass(frozen=True, slots=True)
class Cell:
    reader: str
    model: str
    target: str
    mode: str

    def describe(self) -> str:
        return (f"reader {READER_NAMES[self.reader]}, event model {MODEL_NAMES[self.model]}, "
                f"target {TARGET_NAMES[self.target]}, mode {self.mode} "
                f"(headwater.pipeline.mode={self.mode})")


@dataclass(frozen=True, slots=True)
class Refusal:
    """Cells this rule refuses (None: any value) and why."""

    reason: str
    reader: str | None = None
    model: str | None = None
    target: str | None = None
    mode: str | None = None

    def matches(self, cell: Cell) -> bool:
        return all(want is None or want == got for want, got in (
            (self.reader, cell.reader), (self.model, cell.model),
            (self.target, cell.target), (self.mode, cell.mode)))


_FILES_ONLY_DATASTREAM = ("the files destination holds Datastream events only (the capture "
                          "writes files with headwater.event.format=datastream)")

REFUSALS: Final = (
    Refusal(_FILES_ONLY_DATASTREAM, reader=FILES, model=ROWS),
    Refusal(_FILES_ONLY_DATASTREAM + "; MongoDB's Datastream events (rows of _id and "
            "payload) are Datastream events, not documents", reader=FILES, model=DOCUMENTS),
)

# AUTO CDC flows (`create_auto_cdc_flow`, `start_flows`): the topic log into Delta (delta-rs),
# SCD1 or SCD2; by event model.
FLOW_REFUSALS: Final = {
    DOCUMENTS: "AUTO CDC flows take Debezium rows and Datastream events; MongoDB topics go "
               "through headwater pipeline (the document path)",
}


class UnsupportedCombination(ValueError):
    """A reader x event model x target x mode the pipeline does not run (`REFUSALS`)."""


def refusal(cell: Cell) -> str | None:
    """Why `cell` is refused, or None when it is supported."""
    for rule in REFUSALS:
        if rule.matches(cell):
            return rule.reason
    return None


def message(cell: Cell, reason: str) -> str:
    return f"unsupported combination: {cell.describe()}: {reason}"


def require(cell: Cell) -> None:
    """Raises `UnsupportedCombination` naming the cell and the reason when it is refused."""
    reason = refusal(cell)
    if reason is not None:
        raise UnsupportedCombination(message(cell, reason))


def require_flow(model: str, source: str) -> None:
    """AUTO CDC flows' check: the same error shape, for the flow's source topic."""
    reason = FLOW_REFUSALS.get(model)
    if reason is not None:
        raise UnsupportedCombination(f"unsupported combination: AUTO CDC flow over topic "
                                     f"{source}, event model {MODEL_NAMES[model]}: {reason}")


def cells() -> Iterator[Cell]:
    for reader, model, target, mode in product(READERS, MODELS, TARGETS, MODES):
        yield Cell(reader, model, target, mode)


def target_key(target: str, delta_writer: str) -> str:
    """The table's target dimension from `headwater.pipeline.target` and `.delta.writer`."""
    if target == "delta":
        return DELTA_SPARK if delta_writer == "spark" else DELTA_RS
    return target


def reader_key(source: str, kafka: bool) -> str:
    """The table's reader dimension from `headwater.pipeline.source` and whether the
    connector writes to Kafka (`headwater.topics.store=kafka`)."""
    if source == FILES:
        return FILES
    return KAFKA if kafka else TOPICS


def markdown_table() -> str:
    """The table for docs/pipeline.md (`python -m headwater.pipeline.capabilities` prints it):
    one line per reader x event model x target, the modes as columns, "yes" or "no (n)" with
    the reasons numbered below it; AUTO CDC flows after."""
    reasons: list[str] = []

    def mark(reason: str | None) -> str:
        if reason is None:
            return "yes"
        if reason not in reasons:
            reasons.append(reason)
        return f"no ({reasons.index(reason) + 1})"

    lines = ["| reader | event model | target | " + " | ".join(MODES) + " |",
             "|---|---|---|" + "---|" * len(MODES)]
    for reader, model, target in product(READERS, MODELS, TARGETS):
        marks = [mark(refusal(Cell(reader, model, target, mode))) for mode in MODES]
        lines.append(f"| {reader} | {MODEL_NAMES[model]} | {target} | " + " | ".join(marks)
                     + " |")
    lines += ["", "| AUTO CDC flows (topic log, Delta with delta-rs, scd1/scd2) | |", "|---|---|"]
    lines += [f"| {MODEL_NAMES[m]} | {mark(FLOW_REFUSALS.get(m))} |" for m in MODELS]
    lines.append("")
    lines += [f"{n}. {reason}" for n, reason in enumerate(reasons, 1)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
