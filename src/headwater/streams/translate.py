"""A stream into the connector configuration the existing capture runs.

Why a translation and not a second capture path: the capture (`headwater.capture`) already
does snapshots, streaming, signals and durability for a Debezium configuration; a stream is
one more way to write such a configuration.  Each Datastream concept maps to Debezium
properties:

* include/exclude objects -> `table.include.list` (or `table.exclude.list` when nothing is
  included), `column.include.list`/`column.exclude.list`; Debezium refuses an include list
  together with its exclude list, so exclusions inside an include list become negative
  look-aheads in the include regular expressions;
* backfill strategy automatic / none -> `snapshot.mode` `initial` / `no_data`; automatic
  with `excludedObjects` -> `no_data`, and the worker queues an AUTOMATIC backfill job
  (an incremental snapshot) for every captured table not excluded (streams/jobs.py), since
  the relational connectors have no `snapshot.include.collection.list`;
* per-object backfill (start with an optional WHERE filter, stop) -> `execute-snapshot` /
  `stop-snapshot` signals on the file channel (incremental snapshots with
  `additional-conditions`), read-only watermarks so nothing is written to the source
  (MongoDB and SQL Server: watermarks in the stream's `signal.data.collection`, as those
  connectors have no read-only variant);
* the stream's own directory -> offsets, schema history, signal file;
* the destination profile -> the topic log directory, or the files destination's properties
  (`headwater.destination=files`, Datastream events).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final

from headwater.streams.model import BACKFILL_NONE, ObjectRef, StreamSpec
from headwater.streams.profiles import Profile, source_kind

SIGNAL_FILE: Final = "signals.jsonl"
OFFSETS_FILE: Final = "offsets.json"
CONFIG_FILE: Final = "connector.json"


def _table_re(ref: ObjectRef) -> str:
    head = re.escape(ref.container)
    return f"{head}\\.{re.escape(ref.table)}" if ref.table is not None else f"{head}\\..+"


def _column_re(ref: ObjectRef) -> str:
    assert ref.table is not None and ref.column is not None
    return f"{re.escape(ref.container)}\\.{re.escape(ref.table)}\\.{re.escape(ref.column)}"


def _not(patterns: Iterable[str]) -> str:
    items = sorted(set(patterns))
    return f"(?!(?:{'|'.join(items)})$)" if items else ""


def _joined(patterns: Iterable[str]) -> str:
    # Debezium lists are comma-separated: a regular expression holding a comma cannot be
    # listed (quote such names out: none of re.escape's outputs contains one unescaped).
    out = []
    for p in patterns:
        if "," in p:
            raise ValueError(f"object name pattern {p!r} contains a comma, which a Debezium "
                             "list property cannot hold")
        out.append(p)
    return ",".join(out)


def object_filters(spec: StreamSpec) -> dict[str, str]:
    """The table and column list properties of the stream's include/exclude objects."""
    props: dict[str, str] = {}
    table_excl = [_table_re(r) for r in spec.exclude if r.column is None]
    col_excl = [_column_re(r) for r in spec.exclude if r.column is not None]
    includes = {ObjectRef(r.container, r.table) for r in spec.include}
    if includes:
        guard = _not(table_excl)
        props["table.include.list"] = _joined(guard + _table_re(r) for r in sorted(
            includes, key=str))
    elif table_excl:
        props["table.exclude.list"] = _joined(table_excl)
    col_incl = [r for r in spec.include if r.column is not None]
    if col_incl:
        restricted = sorted({_table_re(ObjectRef(r.container, r.table)) for r in col_incl})
        guard = _not(col_excl)
        listed = [guard + _column_re(r) for r in col_incl]
        # Every column of a table without a column list, except the excluded ones.
        others = f"(?!(?:{'|'.join(restricted)})\\.[^.]+$){guard}.+"
        props["column.include.list"] = _joined([*listed, others])
    elif col_excl:
        props["column.exclude.list"] = _joined(col_excl)
    return props


def collection_filters(spec: StreamSpec) -> dict[str, str]:
    """MongoDB's lists: databases and collections (`<db>.<collection>`), and fields excluded
    by `field.exclude.list` (Datastream's MongoDB source has field exclusions only; an
    included field is refused)."""
    props: dict[str, str] = {}
    if any(r.column is not None for r in spec.include):
        raise ValueError("a MongoDB stream includes databases and collections, not fields "
                         "(Datastream's MongoDB source excludes fields only)")
    includes = {ObjectRef(r.container, r.table) for r in spec.include}
    table_excl = [_table_re(r) for r in spec.exclude if r.column is None]
    if includes:
        props["collection.include.list"] = _joined(_not(table_excl) + _table_re(r)
                                                   for r in sorted(includes, key=str))
    elif table_excl:
        props["collection.exclude.list"] = _joined(table_excl)
    fields = sorted(f"{r.container}.{r.table}.{r.column}" for r in spec.exclude
                    if r.column is not None)
    if fields:
        props["field.exclude.list"] = ",".join(fields)
    return props


def server_id(name: str) -> int:
    """A stable MySQL replica server id per stream (Debezium needs one unique per reader)."""
    return 100_000 + zlib.crc32(name.encode()) % 1_000_000_000


def stream_dir(data_dir: Path, name: str) -> Path:
    return data_dir / "streams" / name


def topics_dir(spec: StreamSpec, destination: Profile) -> Path:
    return Path(destination.properties["directory"]) / (spec.destination_path or spec.name)


def connector_properties(spec: StreamSpec, source: Profile, destination: Profile,
                         data_dir: Path) -> dict[str, str]:
    """The full connector configuration of a stream (secrets as the profile holds them)."""
    kind = source_kind(source.kind)
    home = stream_dir(data_dir, spec.name).resolve()
    props: dict[str, str] = {
        "name": spec.name,
        "connector.class": kind.connector_class,
        **source.properties,
        "topic.prefix": spec.name.replace("-", "_"),
        "offset.storage.file.filename": str(home / OFFSETS_FILE),
        "snapshot.mode": ("no_data" if spec.backfill == BACKFILL_NONE or spec.backfill_exclude
                          else "initial"),
        "signal.enabled.channels": "file",
        "signal.file": str(home / SIGNAL_FILE),
        "signal.poll.interval.ms": "1000",
    }
    if kind.name not in ("mongodb", "sqlserver"):
        # MongoDB's and SQL Server's incremental snapshots write their watermarks (into
        # `signal.data.collection`): those connectors refuse read.only.
        props["read.only"] = "true"
    # Slots and publications are server-wide: two data directories (or two users) with a
    # stream of the same name must not share one, so the catalog's path is in the name.
    slug = (f"{spec.name.replace('-', '_').lower()[:40]}_"
            f"{zlib.crc32(str(data_dir.resolve()).encode()):08x}")
    if kind.name == "postgresql":
        props.setdefault("plugin.name", "pgoutput")
        props.setdefault("slot.name", f"hw_{slug}")
        props.setdefault("publication.name", f"hw_{slug}_pub")
        props.setdefault("publication.autocreate.mode", "filtered")
    elif kind.name == "mysql":
        props.setdefault("database.server.id", str(server_id(spec.name)))
        props["schema.history.internal.file.filename"] = str(home / "schema-history.jsonl")
        containers = sorted({r.container for r in spec.include})
        if containers:
            props["database.include.list"] = _joined(re.escape(c) for c in containers)
    elif kind.name == "sqlserver":
        props["schema.history.internal.file.filename"] = str(home / "schema-history.jsonl")
    props.update(collection_filters(spec) if kind.name == "mongodb" else object_filters(spec))
    if destination.kind == "topics":
        props["headwater.topics.dir"] = str(topics_dir(spec, destination).resolve())
    else:
        # Datastream's own layout: its events, in files under the destination directory.
        props["headwater.destination"] = "files"
        props["headwater.destination.files.dir"] = str(topics_dir(spec, destination).resolve())
        props["headwater.destination.files.format"] = destination.properties.get(
            "format", "json")
        props["headwater.event.format"] = "datastream"
        props["headwater.datastream.stream.name"] = spec.name
    props.update(spec.properties)
    return props


def write_config(path: Path, props: Mapping[str, str]) -> Path:
    """Writes the configuration as JSON (regular expressions keep their backslashes, which a
    .properties file would eat), readable only by the owner (it may hold a password)."""
    import os

    import orjson

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(orjson.dumps(dict(props), option=orjson.OPT_INDENT_2))
    os.replace(tmp, path)
    return path
