"""BSON values as the JSON text Debezium's MongoDB events carry (before, after, the key's id,
updateDescription.updatedFields).

Why a module of its own: the exact encoding (Debezium's legacy mode: Extended JSON v1 strict
for documents, v2 relaxed for updated fields) is a job of its own; this version is a simple
stand-in on `bson.json_util` (relaxed mode) with the final API, so the connector calls only
these three names and a faithful encoder can replace the module as a whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bson import json_util

_OPTIONS = json_util.JSONOptions(json_mode=json_util.JSONMode.RELAXED)


def document_json(doc: Mapping[str, Any]) -> str:
    """A whole document (`before`, `after`)."""
    return json_util.dumps(doc, json_options=_OPTIONS, separators=(",", ":"))


def id_json(value: Any) -> str:
    """A document's `_id` as the key's `id` field (the value alone, not a document)."""
    return json_util.dumps(value, json_options=_OPTIONS, separators=(",", ":"))


def update_description(desc: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A change event's `updateDescription` as the envelope's payload: `removedFields`,
    `updatedFields` (JSON text) and `truncatedArrays` ({field, size}), each null when absent
    or empty, as Debezium leaves them."""
    if desc is None:
        return None
    removed = list(desc.get("removedFields") or ()) or None
    updated = desc.get("updatedFields")
    truncated = [{"field": t["field"], "size": int(t["newSize"])}
                 for t in desc.get("truncatedArrays") or ()] or None
    return {
        "removedFields": removed,
        "updatedFields": document_json(updated) if updated is not None else None,
        "truncatedArrays": truncated,
    }
