"""`headwater validate` for a MongoDB connector: each document target against its collection.

The targets are the pipeline's: under the Delta root (`<database>/<collection>`), in the
JDBC target's schema (a table per collection, `<collection>`, its database found as
`jdbc_side.source_schema` finds a relational table's schema) or in the Iceberg warehouse
(`<catalog>.<database>.<collection>`, opened through the pipeline's Spark session and catalog
by `iceberg_side.open_targets`, as for relational rows).  All are the same document table
(`__hw_id`, `__hw_doc`, ...), so only how its current documents are read differs: each
target in `TARGETS` gives a reader of them, behind one `mongodb_side.DocumentSide` (the
canonical form and hashing are one).  SCD1 and SCD2 (the open versions) are compared; the
changelog is refused by property name, with its reason (`MODES`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import partial
from typing import Any, Final

from headwater.config import ConfigError
from headwater.pipeline.config import PipelineConfig
from headwater.pipeline.documents.flow import DOC, ID
from headwater.validate import catalog
from headwater.validate.compare import Options, compare_table
from headwater.validate.model import TablePlan, TableResult
from headwater.validate.mongodb_side import (
    DOCUMENT,
    DocumentSide,
    MongoSource,
    delta_documents,
    field_diffs,
)

# (database, collection, the target's label, its columns) per document target
Found = list[tuple[str, str, str, Callable[[], Iterable[str]]]]


def check_documents(pipeline: PipelineConfig) -> None:
    """ConfigError naming the property when validate does not compare the pipeline's document
    targets (`TARGETS`, `MODES`)."""
    problems = []
    if pipeline.target not in TARGETS:
        problems.append(f"headwater.pipeline.target: validate compares MongoDB collections "
                        f"with {_names(TARGETS)} targets, not {pipeline.target!r}")
    if MODES.get(pipeline.mode, "") is not None:
        compared = [m for m, why in MODES.items() if why is None]
        why = MODES.get(pipeline.mode)
        problems.append(f"headwater.pipeline.mode: validate compares MongoDB collections with "
                        f"{_names(compared)} targets, not {pipeline.mode!r}"
                        + (f" ({why})" if why else ""))
    if problems:
        raise ConfigError(problems)


def _names(names: Iterable[str]) -> str:
    *first, last = [{"delta": "Delta", "jdbc": "JDBC", "iceberg": "Iceberg"}.get(n, n)
                    for n in names]
    return f"{', '.join(first)} and {last}" if first else last


def plan(database: str, collection: str, target: str, mode: str) -> TablePlan:
    """The `_id` is the key; the document is one compared value (its fields named on a
    difference, `mongodb_side.field_diffs`)."""
    return TablePlan(database, collection, target, ("_id",),
                     (("_id", "text"), (DOCUMENT, "text")), False, (), mode)


def validate_documents(connector: Any, pipeline: PipelineConfig, options: Options,
                       tables: tuple[str, ...] = ()) -> tuple[list[TableResult], list[str]]:
    """Results per compared collection, and the targets that could not be compared (why)."""
    from headwater.connectors.mongodb.connection import client as mongo_client
    from headwater.connectors.mongodb.connector import MongoDbConnector
    from headwater.connectors.mongodb.documents import CollectionCodec
    from headwater.connectors.mongodb.rawdoc import FAST_RAW_OPTIONS

    check_documents(pipeline)
    results: list[TableResult] = []
    problems: list[str] = []
    connector_ = MongoDbConnector(connector)
    client = mongo_client(connector)
    try:
        targets = TARGETS[pipeline.target](pipeline, client, tables, problems)
        with targets as (found, side):
            for database, collection, target, columns in found:
                if not {ID, DOC} <= set(columns()):
                    problems.append(f"{database}.{collection}: {target} is not a document "
                                    f"target (no {ID}/{DOC} columns)")
                    continue
                if collection not in client[database].list_collection_names():
                    problems.append(f"source collection {database}.{collection} not found "
                                    f"(target {target})")
                    continue
                codec = connector_.codec(database, collection)
                if not isinstance(codec, CollectionCodec):
                    problems.append(f"{database}.{collection}: Datastream events are not "
                                    "compared (only Debezium's document envelope)")
                    continue
                source = MongoSource(client[database].get_collection(
                    collection, codec_options=FAST_RAW_OPTIONS), codec)
                result = compare_table(source, side,
                                       plan(database, collection, target, pipeline.mode),
                                       options)
                result.rows = [field_diffs(r) for r in result.rows]
                results.append(result)
    finally:
        client.close()
    return results, problems


@contextmanager
def _delta_targets(pipeline: PipelineConfig, client: Any, tables: tuple[str, ...],
                   problems: list[str]) -> Iterator[tuple[Found, DocumentSide]]:
    """The Delta document tables (only `tables` when named) and the side that reads them."""
    from headwater.validate.run import selected_targets

    delta = selected_targets(pipeline, tables)
    if not delta:
        problems.append(f"no target tables under {pipeline.delta_path}")
    yield ([(d, c, str(path), partial(catalog.delta_columns, path)) for d, c, path in delta],
           DocumentSide(delta_documents))


@contextmanager
def _iceberg_targets(pipeline: PipelineConfig, client: Any, tables: tuple[str, ...],
                     problems: list[str]) -> Iterator[tuple[Found, DocumentSide]]:
    """The Iceberg document tables (`<catalog>.<database>.<collection>`; only `tables` when
    named), read through the pipeline's Spark session (`iceberg_side.open_targets`)."""
    from headwater.validate.iceberg_side import open_targets

    with open_targets(pipeline) as ice:
        found = ice.selected(tables)
        if not found:
            problems.append(ice.none_found())
        yield ([(d, c, ice.label(d, c), partial(ice.columns, d, c)) for d, c in found],
               DocumentSide(lambda p: ice.stream(p, (ID, DOC))))


@contextmanager
def _jdbc_targets(pipeline: PipelineConfig, client: Any, tables: tuple[str, ...],
                  problems: list[str]) -> Iterator[tuple[Found, DocumentSide]]:
    """The JDBC target's document tables (only `tables` when named), each matched with its
    collection's database (`_source_database`)."""
    from headwater.validate.jdbc_side import open_targets

    with open_targets(pipeline) as jdbc:
        found: Found = []
        for table in jdbc.tables():
            database = _source_database(client, pipeline, table)
            if isinstance(database, str):
                found.append((database, table, jdbc.label(table),
                              partial(jdbc.columns, table)))
            elif not tables:
                problems.append(f"{jdbc.label(table)}: source collection " + (
                    f"ambiguous ({', '.join(f'{d}.{table}' for d in database)})" if database
                    else f"{table} not found in any database"))
        found = catalog.named(found, tables, lambda t: (
            f"--table {t}: no target table for {t} in {jdbc.schema} ({jdbc.where})"))
        if not found and not problems:
            problems.append(f"no target tables in {jdbc.schema} ({jdbc.where})")
        yield found, DocumentSide(lambda p: jdbc.stream(p, (ID, DOC)))


# What validate compares MongoDB collections with, as data.  Per `headwater.pipeline.target`:
# its document tables (database, collection, label, columns) and the `DocumentSide` reading
# their current documents, opened for (pipeline, MongoDB client, --table names, problems).
TARGETS: Final[dict[str, Callable[[PipelineConfig, Any, tuple[str, ...], list[str]],
                                  AbstractContextManager[tuple[Found, DocumentSide]]]]] = {
    "delta": _delta_targets,
    "jdbc": _jdbc_targets,
    "iceberg": _iceberg_targets,
}
# Per `headwater.pipeline.mode`: None when compared, else why not.
MODES: Final[dict[str, str | None]] = {
    "scd1": None,
    "scd2": None,  # the open versions
    "changelog": "a document changelog's patch rows hold no document to compare",
}


def _source_database(client: Any, cfg: PipelineConfig, collection: str) -> str | list[str]:
    """The database of JDBC target table `collection`, or the candidates when there is not
    exactly one: several collections of that name are told apart by the topics the pipeline
    reads (`<topic.prefix>.<database>.<collection>`), as `jdbc_side.source_schema` does."""
    found = [d for d in client.list_database_names() if d not in ("admin", "config", "local")
             and collection in client[d].list_collection_names()]
    if len(found) > 1:
        topics = {p.name for p in cfg.topics_dir.iterdir()} if cfg.topics_dir.is_dir() else set()
        found = [d for d in found if f"{cfg.topic_prefix}.{d}.{collection}" in topics] or found
    return found[0] if len(found) == 1 else found
