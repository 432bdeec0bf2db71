"""The change stream's aggregation pipeline (Debezium's ChangeStreamPipelineFactory).

Why filter on the server: a deployment-wide change stream carries every write of every
database; the `$match` keeps only document changes (`insert`, `update`, `replace`, `delete`,
less what `skipped.operations` skips) of the captured namespaces, plus the signal collection,
so that filtered traffic costs no network or decoding.  The server's regular expressions are
anchored here (`^(?:...)$`, case-insensitive): the include/exclude lists match whole names, and
the connector checks every event against them again (`config.collection_filter`), so the
server-side match is an optimisation, never the authority.

Collection lists match the namespace `<db>.<collection>`, which a change event does not carry
as one field: as Debezium does, the event is wrapped (`$replaceRoot` with a `namespace` field)
for the match and unwrapped after it.
"""

from __future__ import annotations

import re
from typing import Any

from headwater.connectors.mongodb.config import MongoDbConnectorConfig

OPERATIONS = {"c": ("insert",), "u": ("update", "replace"), "d": ("delete",)}


def _anchored(patterns: tuple[str, ...], literal: bool) -> dict[str, Any]:
    body = "|".join(re.escape(p) if literal else p for p in patterns)
    return {"$regex": f"^(?:{body})$", "$options": "i"}


def operation_types(cfg: MongoDbConnectorConfig) -> list[str]:
    return [t for op, types in OPERATIONS.items() if op not in cfg.skipped_operations
            for t in types]


def change_stream_pipeline(cfg: MongoDbConnectorConfig,
                           signal_collection: str | None = None) -> list[dict[str, Any]]:
    literal = cfg.filters_match_mode == "literal"
    wrapped = bool(cfg.collection_include_list or cfg.collection_exclude_list)
    prefix = "event." if wrapped else ""
    names: list[dict[str, Any]] = []
    if cfg.database_include_list:
        names.append({f"{prefix}ns.db": _anchored(cfg.database_include_list, literal)})
    elif cfg.database_exclude_list:
        names.append({f"{prefix}ns.db": {"$not": _anchored(cfg.database_exclude_list,
                                                            literal)}})
    if cfg.collection_include_list:
        names.append({"namespace": _anchored(cfg.collection_include_list, literal)})
    elif cfg.collection_exclude_list:
        names.append({"namespace": {"$not": _anchored(cfg.collection_exclude_list, literal)}})
    match: dict[str, Any] = {f"{prefix}operationType": {"$in": operation_types(cfg)}}
    if names:
        match = {"$and": [match, names[0] if len(names) == 1 else {"$and": names}]}
    if signal_collection is not None:
        # signals and watermarks (inserts, and deletes for insert_delete) whatever the filters
        # and skipped.operations say
        db, _, coll = signal_collection.partition(".")
        signal: dict[str, Any] = ({"namespace": signal_collection} if wrapped
                  else {"ns.db": db, "ns.coll": coll})
        signal[f"{prefix}operationType"] = {"$in": ["insert", "delete"]}
        match = {"$or": [match, signal]}
    if not wrapped:
        return [{"$match": match}]
    return [
        {"$replaceRoot": {"newRoot": {
            "namespace": {"$concat": ["$ns.db", ".", "$ns.coll"]}, "event": "$$ROOT"}}},
        {"$match": match},
        {"$replaceRoot": {"newRoot": "$event"}},
    ]
