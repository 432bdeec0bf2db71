"""`headwater validate` for a MongoDB connector: each document target under the Delta root
(`<database>/<collection>`, the pipeline's layout) against its collection.

Only SCD1 Delta targets are compared (one row per current document); other modes and JDBC
and Iceberg targets are refused by property name.
"""

from __future__ import annotations

from typing import Any

from headwater.config import ConfigError
from headwater.pipeline.config import PipelineConfig
from headwater.pipeline.documents.flow import DOC, ID
from headwater.validate import catalog
from headwater.validate.compare import Options, compare_table
from headwater.validate.model import TablePlan, TableResult
from headwater.validate.mongodb_side import (
    DOCUMENT,
    DocumentDeltaSide,
    MongoSource,
    field_diffs,
)


def check_documents(pipeline: PipelineConfig) -> None:
    problems = []
    if pipeline.target != "delta":
        problems.append(f"headwater.pipeline.target: validate compares MongoDB collections "
                        f"with Delta targets, not {pipeline.target!r}")
    if pipeline.mode != "scd1":
        problems.append(f"headwater.pipeline.mode: validate compares MongoDB collections with "
                        f"scd1 targets, not {pipeline.mode!r}")
    if problems:
        raise ConfigError(problems)


def plan(database: str, collection: str, path: str) -> TablePlan:
    """The `_id` is the key; the document is one compared value (its fields named on a
    difference, `mongodb_side.field_diffs`)."""
    return TablePlan(database, collection, path, ("_id",), (("_id", "text"), (DOCUMENT, "text")),
                     False, (), "scd1")


def validate_documents(connector: Any, pipeline: PipelineConfig, options: Options,
                       tables: tuple[str, ...] = ()) -> tuple[list[TableResult], list[str]]:
    """Results per compared collection, and the targets that could not be compared (why)."""
    from headwater.connectors.mongodb.connection import client as mongo_client
    from headwater.connectors.mongodb.connector import MongoDbConnector
    from headwater.connectors.mongodb.documents import CollectionCodec
    from headwater.connectors.mongodb.rawdoc import FAST_RAW_OPTIONS

    check_documents(pipeline)
    from headwater.validate.run import selected_targets

    found = selected_targets(pipeline, tables)
    results: list[TableResult] = []
    problems: list[str] = []
    connector_ = MongoDbConnector(connector)
    side = DocumentDeltaSide()
    client = mongo_client(connector)
    try:
        for database, collection, path in found:
            columns = catalog.delta_columns(path)
            if ID not in columns or DOC not in columns:
                problems.append(f"{database}.{collection}: {path} is not a document target "
                                f"(no {ID}/{DOC} columns)")
                continue
            if collection not in client[database].list_collection_names():
                problems.append(f"source collection {database}.{collection} not found "
                                f"(target {path})")
                continue
            codec = connector_.codec(database, collection)
            if not isinstance(codec, CollectionCodec):
                problems.append(f"{database}.{collection}: Datastream events are not compared "
                                "(only Debezium's document envelope)")
                continue
            source = MongoSource(client[database].get_collection(
                collection, codec_options=FAST_RAW_OPTIONS), codec)
            result = compare_table(source, side, plan(database, collection, str(path)), options)
            result.rows = [field_diffs(r) for r in result.rows]
            results.append(result)
    finally:
        client.close()
    if not found:
        problems.append(f"no target tables under {pipeline.delta_path}")
    return results, problems
