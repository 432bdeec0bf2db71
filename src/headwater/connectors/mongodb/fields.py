"""`field.exclude.list` and `field.renames`: fields left out of or renamed in the events' JSON.

Debezium's FieldSelector, rule for rule, so that the same configuration gives the same events:
each rule names ``<db>.<collection>.<field>[.<nested>...]`` (``*`` in the database and
collection parts matches anything, case-insensitively) and applies to a whole document
(`before`, `after`, snapshot reads: the path is followed through sub-documents and arrays of
sub-documents), to `updatedFields` (keys in dot notation, array indexes skipped when matching),
and to the paths of `removedFields` and `truncatedArrays` (a path that is a prefix of an
excluded field is dropped, a renamed one gets its new name).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any


class FieldRule:
    """One rule: remove (`new_name` None) or rename the field at `nodes`."""

    __slots__ = ("field", "namespace", "new_field", "new_name", "nodes")

    def __init__(self, namespace: str, nodes: Sequence[str], new_name: str | None) -> None:
        db, coll = namespace.split(".", 1)
        pattern = db.replace("*", ".*") + r"\." + coll.replace("*", ".*")
        self.namespace = re.compile(pattern, re.IGNORECASE)
        self.nodes = tuple(nodes)
        self.field = ".".join(self.nodes)
        self.new_name = new_name
        self.new_field = ".".join((*self.nodes[:-1], new_name)) if new_name is not None else None

    # -- whole documents ------------------------------------------------------------------------
    def modify(self, doc: dict[str, Any], start: int = 0) -> None:
        current = doc
        last = len(self.nodes) - 1
        for i in range(start, len(self.nodes)):
            node = self.nodes[i]
            if i == last:
                self._change(current, node, self.new_name)
                return
            nxt = current.get(node)
            if isinstance(nxt, dict):
                current = nxt
            else:
                self._into_list(nxt, i + 1)
                return

    def _into_list(self, value: Any, start: int) -> None:
        if isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    self.modify(item, start)

    @staticmethod
    def _change(doc: dict[str, Any], key: str, new: str | None) -> None:
        if key not in doc:
            return
        value = doc.pop(key)
        if new is not None:
            if new in doc:
                raise ValueError(f"document already contains field: {new}")
            doc[new] = value

    # -- updatedFields (dot notation) -------------------------------------------------------------
    def modify_change(self, doc: dict[str, Any]) -> None:
        if self.field in doc:
            self._change(doc, self.field, self.new_field)
            return
        renamed: list[tuple[str, Any]] = []
        for key in list(doc):
            origin = key.split(".")
            parts = _without_indexes(origin)
            if len(parts) > len(self.nodes):
                if _starts_with(self.nodes, parts):  # the field is a prefix of the key
                    value = doc.pop(key)
                    if self.new_name is not None:
                        renamed.append((self.rename(origin), value))
            elif len(parts) < len(self.nodes):
                if _starts_with(parts, self.nodes):  # the key is a prefix of the field
                    value = doc[key]
                    if isinstance(value, dict):
                        self.modify(value, len(parts))
                    else:
                        self._into_list(value, len(parts))
                    break
            elif tuple(parts) == self.nodes:
                value = doc.pop(key)
                if self.new_name is not None:
                    renamed.append((self.rename(origin), value))
        for key, value in renamed:
            if key in doc:
                raise ValueError(f"document already contains field: {key}")
            doc[key] = value

    # -- paths (removedFields, truncatedArrays) ---------------------------------------------------
    def matches_path(self, path: str) -> bool:
        return _starts_with(_without_indexes(path.split(".")), self.nodes)

    def rename(self, parts: Sequence[str]) -> str:
        out = []
        i = 0
        last = len(self.nodes) - 1
        for part in parts:
            if part.isdigit():
                out.append(part)
            else:
                out.append(self.new_name if i == last and self.new_name is not None else part)
                i += 1
        return ".".join(out)

    def map_path(self, path: str) -> str | None:
        if self.new_name is None:
            return None
        return self.rename(path.split("."))


def _without_indexes(parts: list[str]) -> list[str]:
    """Path parts without array indexes (two indexes in a row: left as they are)."""
    if len(parts) <= 1:
        return parts
    out: list[str] = []
    previous = False
    for part in parts:
        if part.isdigit():
            if previous:
                return parts
            previous = True
        else:
            previous = False
            out.append(part)
    return out


def _starts_with(begin: Sequence[str], source: Sequence[str]) -> bool:
    return len(begin) <= len(source) and all(source[i] == b for i, b in enumerate(begin))


class FieldFilter:
    """The rules of one collection (none: every method returns its input)."""

    __slots__ = ("rules",)

    def __init__(self, rules: Sequence[FieldRule]) -> None:
        self.rules = tuple(rules)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def document(self, doc: dict[str, Any]) -> dict[str, Any]:
        for rule in self.rules:
            rule.modify(doc)
        return doc

    def change(self, doc: dict[str, Any]) -> dict[str, Any]:
        for rule in self.rules:
            rule.modify_change(doc)
        return doc

    def path(self, path: str) -> str | None:
        for rule in self.rules:
            if rule.matches_path(path):
                return rule.map_path(path)
        return path


class FieldSelector:
    """Every rule of `field.exclude.list` and `field.renames`; `for_collection` picks them."""

    def __init__(self, exclude: str | None, renames: str | None) -> None:
        rules: list[FieldRule] = []
        for entry in _entries(exclude):
            parts = entry.split(".")
            rules.append(FieldRule(f"{parts[0]}.{parts[1]}", parts[2:], None))
        for entry in _entries(renames):
            path, _, new = entry.partition(":")
            parts = path.split(".")
            rules.append(FieldRule(f"{parts[0]}.{parts[1]}", parts[2:], new.strip()))
        self.rules = tuple(rules)

    def for_collection(self, database: str, collection: str) -> FieldFilter:
        namespace = f"{database}.{collection}"
        return FieldFilter([r for r in self.rules if r.namespace.fullmatch(namespace)])


def _entries(text: str | None) -> list[str]:
    return [e.strip() for e in (text or "").split(",") if e.strip()]
