"""Structural comparison of two Debezium records, and the explained differences of the docs.

A record is compared as parsed JSON, keeping what a dict comparison would lose: the order of
object keys (a Connect struct's field order shows in both its schema and its payload).
Differences are reported as (path, Debezium's value, Headwater's value); a path names schema
struct members by their `field` (`value.schema.fields[source].fields[ts_us]`) so that rules in
docs/compatibility.md can match them with `*` and `{a,b}` patterns.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()


class Difference(NamedTuple):
    topic: str
    path: str
    debezium: Any
    headwater: Any

    def __str__(self) -> str:
        return (f"{self.topic} {self.path}: "
                f"Debezium {self.debezium!r} / Headwater {self.headwater!r}")


class Rule(NamedTuple):
    """One row of the compatibility table: which differences it explains."""

    topic: str  # fnmatch pattern on the topic
    path: str  # fnmatch pattern on the difference's path
    what: str
    why: str

    def explains(self, diff: Difference) -> bool:
        return bool(_pattern(self.topic).fullmatch(diff.topic)
                    and _pattern(self.path).fullmatch(diff.path))


def _pattern(text: str) -> re.Pattern[str]:
    """`*` matches anything, `{a,b}` one of the alternatives; everything else is literal
    (paths are full of brackets, so no shell character classes)."""
    out = []
    for token in re.split(r"(\*|\{[^}]*\})", text):
        if token == "*":
            out.append(".*")
        elif token.startswith("{") and token.endswith("}"):
            out.append("(?:" + "|".join(re.escape(a) for a in token[1:-1].split(",")) + ")")
        else:
            out.append(re.escape(token))
    return re.compile("".join(out))


def _label(item: Any, index: int) -> str:
    field = item.get("field") if isinstance(item, dict) else None
    return field if isinstance(field, str) else str(index)


def diff(topic: str, path: str, dbz: Any, hw: Any, out: list[Difference]) -> None:
    """Appends every difference between `dbz` and `hw` (JSON values) below `path`."""
    if isinstance(dbz, dict) and isinstance(hw, dict):
        if list(dbz) != list(hw) and set(dbz) == set(hw):
            out.append(Difference(topic, f"{path}.<key order>", list(dbz), list(hw)))
        for key in dbz.keys() | hw.keys():
            diff(topic, f"{path}.{key}", dbz.get(key, MISSING), hw.get(key, MISSING), out)
        return
    if isinstance(dbz, list) and isinstance(hw, list):
        labels_d = [_label(x, i) for i, x in enumerate(dbz)]
        labels_h = [_label(x, i) for i, x in enumerate(hw)]
        if labels_d != labels_h and all(not lbl.isdigit() for lbl in labels_d + labels_h):
            # struct members: compare by name, and report the order once
            if set(labels_d) == set(labels_h):
                out.append(Difference(topic, f"{path}[<field order>]", labels_d, labels_h))
            d_by = dict(zip(labels_d, dbz, strict=True))
            h_by = dict(zip(labels_h, hw, strict=True))
            for lbl in d_by.keys() | h_by.keys():
                diff(topic, f"{path}[{lbl}]", d_by.get(lbl, MISSING), h_by.get(lbl, MISSING),
                     out)
            return
        if len(dbz) != len(hw):
            out.append(Difference(topic, f"{path}.<length>", len(dbz), len(hw)))
        for i, (a, b) in enumerate(zip(dbz, hw, strict=False)):
            diff(topic, f"{path}[{labels_d[i]}]", a, b, out)
        return
    if dbz != hw or type(dbz) is not type(hw):
        out.append(Difference(topic, path, dbz, hw))


_ROW = re.compile(r"^\|\s*`([^`]*)`\s*\|\s*`([^`]*)`\s*\|([^|]*)\|([^|]*)\|\s*$")


def load_rules(doc: Path, heading: str = "## Differences the tests accept") -> list[Rule]:
    """The rows of the table under `heading` in `doc` (one table per connector: a run must
    need every rule of its own table).

    Each row: | `topic pattern` | `path pattern` | what differs | why |
    """
    text = doc.read_text()
    start = text.index(heading + "\n")
    rules: list[Rule] = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("## "):
            break
        m = _ROW.match(line)
        if m:
            rules.append(Rule(m[1], m[2], m[3].strip(), m[4].strip()))
    if not rules:
        raise ValueError(f"{doc}: no rules under {heading!r}")
    return rules
