"""Updates without a full document (capture.mode=change_streams): `updateDescription` applied
to the document's previous state.

MongoDB describes an update as: arrays cut to a new length (`truncatedArrays`), then values
set at dotted paths (`updatedFields`; a number after an array names an element), then paths
removed (`removedFields`, `$unset`).  Applying the three in that order to the state before the
update gives the state after it, which is what a change stream's full document would have
been.  Pure and copy-on-write: the previous state is never modified (it may be a stored
version, or another event's image).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson


class Update(NamedTuple):
    updated: dict[str, Any]  # dotted path -> Extended JSON value
    removed: tuple[str, ...]
    truncated: tuple[tuple[str, int], ...]  # (path of an array, its new length)


def parse_update(description: dict[str, Any] | None) -> Update:
    """An `updateDescription` of a Debezium MongoDB event (updatedFields is JSON text)."""
    d = description or {}
    updated = d.get("updatedFields")
    if isinstance(updated, str):
        updated = orjson.loads(updated)
    return Update(
        dict(updated or {}),
        tuple(d.get("removedFields") or ()),
        tuple((t["field"], int(t["size"])) for t in d.get("truncatedArrays") or ()),
    )


def _index(part: str) -> int | None:
    return int(part) if part.isdigit() else None


def _child(container: Any, part: str) -> Any:
    if isinstance(container, dict):
        return container.get(part)
    i = _index(part)
    if isinstance(container, list) and i is not None and i < len(container):
        return container[i]
    return None


def _copy(node: Any) -> Any:
    if isinstance(node, dict):
        return dict(node)
    if isinstance(node, list):
        return list(node)
    return node


def _assign(container: Any, part: str, value: Any) -> Any:
    """`container` (already a copy) with `part` set to `value`; a scalar in the way becomes a
    document, as `$set` creates missing parents; an array index past the end pads with null."""
    i = _index(part)
    if isinstance(container, list) and i is not None:
        container.extend([None] * (i + 1 - len(container)))
        container[i] = value
        return container
    if not isinstance(container, dict):
        container = {}
    container[part] = value
    return container


def _set(node: Any, parts: list[str], value: Any) -> Any:
    """A copy of `node` with the path set to `value` (copies only along the path)."""
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    child = _child(node, head)
    copy = _copy(node) if isinstance(node, (dict, list)) else {}
    return _assign(copy, head, _set(child, rest, value) if rest else value)


def _remove(node: Any, parts: list[str]) -> Any:
    """A copy of `node` without the path (`$unset` on an array element sets it to null)."""
    head, rest = parts[0], parts[1:]
    if isinstance(node, dict):
        if head not in node:
            return node
        copy = dict(node)
        if rest:
            copy[head] = _remove(node[head], rest)
        else:
            del copy[head]
        return copy
    i = _index(head)
    if isinstance(node, list) and i is not None and i < len(node):
        copy_list = list(node)
        copy_list[i] = _remove(node[i], rest) if rest else None
        return copy_list
    return node


def _truncate(node: Any, parts: list[str], size: int) -> Any:
    if not parts:
        return node[:size] if isinstance(node, list) else node
    child = _child(node, parts[0])
    if child is None:
        return node
    copy = _copy(node)
    return _assign(copy, parts[0], _truncate(child, parts[1:], size))


def apply_update(doc: dict[str, Any], update: Update) -> dict[str, Any]:
    """The document after the update (see the module docstring); `doc` is left as it was."""
    out: Any = doc
    for path, size in update.truncated:
        out = _truncate(out, path.split("."), size)
    for path, value in update.updated.items():
        out = _set(out, path.split("."), value)
    for path in update.removed:
        out = _remove(out, path.split("."))
    assert isinstance(out, dict)
    return out
