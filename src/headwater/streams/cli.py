"""`headwater streams ...` and `headwater profiles ...`: Datastream's concepts on the command
line.  Every command takes `--data-dir` (or $HEADWATER_DATA_DIR) and most print JSON with
`--json`, the shape the later REST service will return."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from headwater.streams.catalog import Catalog, CatalogError, StreamRecord, data_dir
from headwater.streams.model import (
    ObjectRef,
    StreamSpec,
    StreamSpecError,
    datastream_objects,
    source_prefix,
)
from headwater.streams.profiles import (
    ProfileError,
    destination_profile,
    masked,
    source_kind,
    source_profile,
)
from headwater.streams.states import ACTIVE, State, TransitionError

streams_app = typer.Typer(no_args_is_help=True, help="Datastream-style streams: a source "
                          "profile, a destination profile, objects and a backfill strategy.")
profiles_app = typer.Typer(no_args_is_help=True, help="Connection profiles (sources and "
                           "destinations) and discover.")

console = Console(highlight=False)
err = Console(stderr=True, highlight=False)

DataDir = Annotated[Path | None, typer.Option(
    "--data-dir", envvar="HEADWATER_DATA_DIR",
    help="catalog and stream state directory (default ./headwater-data)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON")]
WaitOpt = Annotated[float, typer.Option(
    "--wait", help="seconds to wait for the state to settle (0: return at once)")]


def _catalog(directory: Path | None) -> Catalog:
    return Catalog(data_dir(directory))


def _out(doc: Any) -> None:
    sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")


def _fail(exc: Exception, code: int = 1) -> typer.Exit:
    err.print(f"[red]error[/red]: {exc}", soft_wrap=True, markup=True)
    return typer.Exit(code)


def _props(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ProfileError(f"property {item!r}: write it as key=value")
        out[key.strip()] = value
    return out


# -- profiles ----------------------------------------------------------------------------------

@profiles_app.command("create")
def profiles_create(
    name: str,
    kind: Annotated[str, typer.Option(
        "--kind", help="postgresql, mysql, mongodb, sqlserver (sources); topics, files "
        "(destinations)")],
    prop: Annotated[list[str] | None, typer.Option(
        "--property", "-p", help="source connection property (Debezium name), key=value")
    ] = None,
    directory: Annotated[str, typer.Option("--dir", help="destination directory")] = "",
    file_format: Annotated[str, typer.Option("--format", help="files: json or avro")
                           ] = "json",
    replace: Annotated[bool, typer.Option("--replace", help="overwrite a profile")] = False,
    data: DataDir = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a connection profile (secrets are masked whenever it is printed)."""
    try:
        if kind in ("topics", "files"):
            profile = destination_profile(name, kind, directory, file_format)
        else:
            profile = source_profile(name, kind, _props(prop))
        saved = _catalog(data).add_profile(profile, replace=replace)
    except (ProfileError, CatalogError) as exc:
        raise _fail(exc, 2) from None
    if as_json:
        _out(saved.rendered())
    else:
        console.print(f"profile {saved.name} ({saved.role}, {saved.kind}) created")


@profiles_app.command("list")
def profiles_list(data: DataDir = None, as_json: JsonOpt = False) -> None:
    """List the connection profiles."""
    profiles = _catalog(data).profiles()
    if as_json:
        _out({"connectionProfiles": [p.rendered() for p in profiles]})
        return
    table = Table("name", "role", "kind", "properties")
    for p in profiles:
        table.add_row(p.name, p.role, p.kind, ", ".join(
            f"{k}={v}" for k, v in masked(p.properties).items()))
    console.print(table)


@profiles_app.command("discover")
def profiles_discover(
    name: str,
    depth: Annotated[int, typer.Option(
        "--depth", help="hierarchyDepth: 1 schemas/databases, 2 + tables, 3 + columns")] = 3,
    full: Annotated[bool, typer.Option("--full-hierarchy", help="everything (depth 3)")
                    ] = False,
    obj: Annotated[str | None, typer.Option(
        "--object", help="only this schema/database, or schema.table")] = None,
    data: DataDir = None,
    as_json: JsonOpt = False,
) -> None:
    """The objects of a source profile's database, as Datastream's discover returns them
    (JSON; without --json a readable tree)."""
    from headwater.streams.discover import FULL_DEPTH, discover

    try:
        profile = _catalog(data).profile(name, "source")
        ref = ObjectRef.parse(obj) if obj else None
        doc = discover(profile, FULL_DEPTH if full else depth,
                       ref.container if ref else None, ref.table if ref else None)
    except (CatalogError, ProfileError, StreamSpecError, ValueError) as exc:
        raise _fail(exc, 2) from None
    except Exception as exc:  # the database refused or is unreachable: say so
        raise _fail(RuntimeError(f"discover failed: {type(exc).__name__}: {exc}")) from None
    if as_json:
        _out(doc)
        return
    for rdbms in doc.values():
        for containers in rdbms.values():
            for c in containers:
                head = c.get("schema", c.get("database"))
                console.print(head, markup=False)
                for tables in c.values():
                    if not isinstance(tables, list):
                        continue
                    for t in tables:
                        console.print(f"  {t['table']}", markup=False)
                        for cols in (v for k, v in t.items() if k.lower().endswith("columns")):
                            for col in cols:
                                flags = (" PK" if col["primaryKey"] else "") + (
                                    "" if col["nullable"] else " NOT NULL")
                                console.print(f"    {col['column']}: {col['dataType']} -> "
                                              f"{col['unifiedType']}{flags}", markup=False)


# -- streams -----------------------------------------------------------------------------------

def _render(cat: Catalog, rec: StreamRecord, *, full: bool = False) -> dict[str, Any]:
    spec = rec.spec
    src = cat.profile(spec.source_profile)
    kind = source_kind(src.kind)
    container, prefix = kind.container, source_prefix(kind.name)
    doc: dict[str, Any] = {
        "name": spec.name,
        "state": rec.state.value,
        "stateTime": rec.state_ms,
        "createTime": rec.created_ms,
        "updateTime": rec.updated_ms,
        "sourceConfig": {
            "sourceConnectionProfile": spec.source_profile,
            f"{prefix}SourceConfig": {
                "includeObjects": datastream_objects(spec.include, container, kind.name),
                "excludeObjects": datastream_objects(spec.exclude, container, kind.name),
            },
        },
        "destinationConfig": {"destinationConnectionProfile": spec.destination_profile,
                              "path": spec.destination_path or spec.name},
        # Datastream's BackfillAllStrategy names its excluded objects by source kind.
        ("backfillNone" if spec.backfill == "none" else "backfillAll"): {
            f"{prefix}ExcludedObjects": datastream_objects(spec.backfill_exclude, container,
                                                           kind.name)
        } if spec.backfill_exclude else {},
        "errors": [e.as_json() for e in cat.errors(spec.name)][-5:],
    }
    # The source config's settings, kept as the connector's properties
    # (server/routes/source_settings.py), shown in Datastream's fields.
    config = doc["sourceConfig"][f"{prefix}SourceConfig"]
    threads = spec.properties.get("snapshot.max.threads", "")
    if threads.isdigit():
        config["maxConcurrentBackfillTasks"] = int(threads)
    if kind.name == "mongodb":
        mode = spec.properties.get("headwater.datastream.mongodb.json.mode")
        if mode in ("strict", "canonical"):
            config["jsonMode"] = mode.upper()
    elif kind.name == "postgresql":
        for field, prop in (("replicationSlot", "slot.name"),
                            ("publication", "publication.name")):
            if prop in spec.properties:
                config[field] = spec.properties[prop]
    if full:
        from headwater.streams.translate import connector_properties

        doc["pid"] = rec.pid
        doc["heartbeatTime"] = rec.heartbeat_ms
        doc["status"] = rec.status
        doc["history"] = cat.history(spec.name)
        try:
            props = connector_properties(spec, src, cat.profile(spec.destination_profile),
                                         cat.root)
            doc["connectorConfig"] = masked(props)
        except Exception as exc:  # a broken profile must not hide the stream
            doc["connectorConfig"] = {"error": str(exc)}
    return doc


render_stream = _render  # the REST service's rendering of a stream (headwater.server)


@streams_app.command("create")
def streams_create(
    name: str,
    source: Annotated[str, typer.Option("--source", help="source connection profile")],
    destination: Annotated[str, typer.Option("--destination",
                                             help="destination connection profile")],
    include: Annotated[list[str] | None, typer.Option(
        "--include", help="schema|database[.table[.column]]; repeatable (none: all)")] = None,
    exclude: Annotated[list[str] | None, typer.Option(
        "--exclude", help="schema|database[.table[.column]]; repeatable")] = None,
    backfill: Annotated[str, typer.Option(
        "--backfill", help="automatic (backfill all, then stream) or none")] = "automatic",
    backfill_exclude: Annotated[list[str] | None, typer.Option(
        "--backfill-exclude", help="backfillAll.excludedObjects: schema|database.table that "
        "is streamed but not backfilled; repeatable")] = None,
    path: Annotated[str, typer.Option("--path", help="destination sub-directory")] = "",
    prop: Annotated[list[str] | None, typer.Option(
        "--property", "-p", help="extra connector property key=value")] = None,
    data: DataDir = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a stream (state NOT_STARTED)."""
    from headwater.streams.profiles import check_name

    cat = _catalog(data)
    try:
        check_name("stream", name)
        spec = StreamSpec(name, source, destination,
                          tuple(ObjectRef.parse(x) for x in include or ()),
                          tuple(ObjectRef.parse(x) for x in exclude or ()),
                          backfill, tuple(ObjectRef.parse(x) for x in backfill_exclude or ()),
                          destination_path=path, properties=_props(prop))
        rec = cat.create_stream(spec)
    except (StreamSpecError, ProfileError, CatalogError) as exc:
        raise _fail(exc, 2) from None
    if as_json:
        _out(_render(cat, rec))
    else:
        console.print(f"stream {name} created: {rec.state.value}")


@streams_app.command("list")
def streams_list(data: DataDir = None, as_json: JsonOpt = False) -> None:
    """List the streams with their states."""
    from headwater.streams.supervisor import Supervisor

    cat = _catalog(data)
    records = Supervisor(cat).reconcile_all()
    if as_json:
        _out({"streams": [_render(cat, r) for r in records]})
        return
    table = Table("name", "state", "source", "destination", "backfill")
    for r in records:
        table.add_row(r.spec.name, r.state.value, r.spec.source_profile,
                      r.spec.destination_profile, r.spec.backfill)
    console.print(table)


@streams_app.command("describe")
def streams_describe(name: str, data: DataDir = None, as_json: JsonOpt = False) -> None:
    """A stream: definition, state and its history, last errors, metrics, connector
    configuration (secrets masked)."""
    from headwater.streams.supervisor import Supervisor

    cat = _catalog(data)
    try:
        rec = Supervisor(cat).reconcile(name)
    except CatalogError as exc:
        raise _fail(exc, 2) from None
    doc = _render(cat, rec, full=True)
    if as_json:
        _out(doc)
        return
    console.print(f"stream {name}: {rec.state.value}", markup=False)
    console.print_json(orjson.dumps(doc).decode())


def _strategy(text: str | None) -> Any:
    """`--cdc-strategy`: a strategy's name, or Datastream's cdcStrategy JSON."""
    from headwater.streams.positions import CdcStrategy, CdcStrategyError

    if text is None:
        return None
    stripped = text.strip()
    if not stripped.startswith("{"):
        return CdcStrategy.parse({stripped: {}})
    try:
        doc = orjson.loads(stripped)
    except orjson.JSONDecodeError as exc:
        raise CdcStrategyError(f"--cdc-strategy: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise CdcStrategyError("--cdc-strategy: expected a JSON object")
    return CdcStrategy.parse(doc.get("cdcStrategy", doc))


def _request(name: str, data: Path | None, verb: str, wait: float,
             settle: frozenset[State], as_json: bool, strategy: str | None = None) -> None:
    from headwater.streams.positions import CdcStrategyError
    from headwater.streams.supervisor import StreamBusy, Supervisor

    cat = _catalog(data)
    sup = Supervisor(cat)
    try:
        args = (name,) if strategy is None else (name, _strategy(strategy))
        state = getattr(sup, verb)(*args)
        rec = sup.wait(name, settle, wait) if wait > 0 else cat.stream(name)
    except (TransitionError, CatalogError, StreamBusy, CdcStrategyError) as exc:
        raise _fail(exc, 2) from None
    if as_json:
        _out(_render(cat, rec))
    else:
        console.print(f"stream {name}: {verb} -> {state.value}"
                      + (f"; now {rec.state.value}" if rec.state is not state else ""),
                      markup=False)
    goal = State.PAUSED if verb == "pause" else State.RUNNING
    if wait > 0 and rec.state in settle and rec.state is not goal:
        # Settled, but not where it was asked to go (a failed start settles in FAILED or
        # back in NOT_STARTED): the exit status says so, and the last error why.
        errors = cat.errors(name)
        why = " ".join(errors[-1].message.split()) if errors else "no error recorded"
        typer.echo(f"error: stream {name} is {rec.state.value}, not {goal.value}: {why} "
                   f"(`headwater streams errors {name}` lists every error)", err=True)
        raise typer.Exit(1)
    if wait > 0 and rec.state not in settle:
        raise typer.Exit(1)


_SETTLED: Any = frozenset(set(State) - {State.STARTING, State.DRAINING})
StrategyOpt = Annotated[str | None, typer.Option(
    "--cdc-strategy", help="where capture starts: mostRecentStartPosition, "
    "nextAvailableStartPosition, or Datastream's cdcStrategy JSON, e.g. "
    '{"specificStartPosition": {"mysqlLogPosition": {"logFile": "b.000002", '
    '"logPosition": 4}}}')]


@streams_app.command("start")
def streams_start(name: str, wait: WaitOpt = 0, cdc_strategy: StrategyOpt = None,
                  data: DataDir = None, as_json: JsonOpt = False) -> None:
    """Start a NOT_STARTED stream: STARTING, then RUNNING once its capture reads (a capture
    process in the background; see `describe` and `errors`)."""
    _request(name, data, "start", wait, _SETTLED, as_json, cdc_strategy)


@streams_app.command("resume")
def streams_resume(name: str, wait: WaitOpt = 0, cdc_strategy: StrategyOpt = None,
                   data: DataDir = None, as_json: JsonOpt = False) -> None:
    """Resume a PAUSED (or FAILED) stream from its kept position (or --cdc-strategy's)."""
    _request(name, data, "resume", wait, _SETTLED, as_json, cdc_strategy)


@streams_app.command("recover")
def streams_recover(name: str, wait: WaitOpt = 0, data: DataDir = None,
                    as_json: JsonOpt = False) -> None:
    """Start a FAILED_PERMANENTLY stream again, after fixing its cause."""
    _request(name, data, "recover", wait, _SETTLED, as_json)


@streams_app.command("pause")
def streams_pause(name: str, wait: WaitOpt = 0, data: DataDir = None,
                  as_json: JsonOpt = False) -> None:
    """Pause: DRAINING (what was read is written and acknowledged), then PAUSED; the
    position is kept for `resume`."""
    _request(name, data, "pause", wait, frozenset({State.PAUSED, State.FAILED,
                                                  State.FAILED_PERMANENTLY}), as_json)


@streams_app.command("drain")
def streams_drain(name: str, timeout: Annotated[float, typer.Option(
        "--timeout", help="seconds to wait for PAUSED")] = 300, data: DataDir = None,
        as_json: JsonOpt = False) -> None:
    """Pause and wait until everything read is durable and acknowledged (PAUSED); exit 1
    if it did not get there in time."""
    _request(name, data, "pause", max(timeout, 0.1), frozenset({State.PAUSED}), as_json)


@streams_app.command("delete")
def streams_delete(name: str, force: Annotated[bool, typer.Option(
        "--force", help="drain an active stream first")] = False,
        data: DataDir = None) -> None:
    """Delete a stream and its state directory (the topics it wrote stay)."""
    from headwater.streams.supervisor import StreamBusy, Supervisor

    try:
        Supervisor(_catalog(data)).delete(name, force=force)
    except (CatalogError, StreamBusy) as exc:
        raise _fail(exc, 2) from None
    console.print(f"stream {name} deleted", markup=False)


@streams_app.command("errors")
def streams_errors(name: str, data: DataDir = None, as_json: JsonOpt = False) -> None:
    """The stream's errors, oldest first (Datastream's FetchStreamErrors)."""
    from headwater.streams.supervisor import Supervisor

    cat = _catalog(data)
    try:
        Supervisor(cat).reconcile(name)
        errors = cat.errors(name)
    except CatalogError as exc:
        raise _fail(exc, 2) from None
    if as_json:
        _out({"errors": [e.as_json() for e in errors]})
        return
    if not errors:
        console.print(f"stream {name}: no errors", markup=False)
    for e in errors:
        doc = e.as_json()
        console.print(f"{doc['errorTime']} {e.reason}: {e.message}", markup=False,
                      soft_wrap=True)


def _backfill(name: str, obj: str, where: str | None, stop: bool, data: Path | None,
              as_json: bool) -> None:
    from headwater.streams.jobs import BackfillError, BackfillJobs

    cat = _catalog(data)
    try:
        rec = cat.stream(name)
        ref = ObjectRef.parse(obj)
        jobs = BackfillJobs(cat)
        job = jobs.stop(name, ref) if stop else jobs.start(name, ref, where)
    except (CatalogError, StreamSpecError, BackfillError) as exc:
        raise _fail(exc, 2) from None
    if as_json:
        _out(job.as_json())
    else:
        queued = "" if rec.state in ACTIVE else f" (stream is {rec.state.value}: runs when "\
            "it runs)"
        console.print(f"backfill of {job.obj}: {job.state.value}{queued}", markup=False)


ObjArg = Annotated[str, typer.Argument(help="schema|database.table")]
WhereOpt = Annotated[str | None, typer.Option(
    "--where", help="partial backfill: SQL filter of the rows (checked on the source first)")]


@streams_app.command("backfill")
def streams_backfill(
    name: str, obj: ObjArg, where: WhereOpt = None,
    stop: Annotated[bool, typer.Option("--stop", help="stop the object's backfill")
                    ] = False,
    data: DataDir = None,
    as_json: JsonOpt = False,
) -> None:
    """Start (or --stop) the backfill job of one object, optionally limited by a WHERE
    filter; it runs while the stream streams (PENDING until it runs)."""
    _backfill(name, obj, where, stop, data, as_json)


@streams_app.command("start-backfill-job")
def streams_start_backfill_job(name: str, obj: ObjArg, where: WhereOpt = None,
                               data: DataDir = None, as_json: JsonOpt = False) -> None:
    """Datastream's startBackfillJob: backfill one object (--where: partial backfill)."""
    _backfill(name, obj, where, False, data, as_json)


@streams_app.command("stop-backfill-job")
def streams_stop_backfill_job(name: str, obj: ObjArg, data: DataDir = None,
                              as_json: JsonOpt = False) -> None:
    """Datastream's stopBackfillJob: stop one object's backfill (a next run starts over)."""
    _backfill(name, obj, None, True, data, as_json)


@streams_app.command("objects")
def streams_objects(name: str, data: DataDir = None, as_json: JsonOpt = False) -> None:
    """The stream's objects with their backfill jobs (Datastream's streams.objects.list):
    state, trigger, last start and end, errors."""
    from headwater.streams.jobs import BackfillJobs, stream_tables

    cat = _catalog(data)
    try:
        jobs = BackfillJobs(cat).objects(name, stream_tables(cat, name))
    except CatalogError as exc:
        raise _fail(exc, 2) from None
    except Exception as exc:  # the source refused or is unreachable: say so
        raise _fail(RuntimeError(f"objects: {type(exc).__name__}: {exc}")) from None
    if as_json:
        _out({"streamObjects": [j.as_json() for j in jobs]})
        return
    table = Table("object", "backfill", "trigger", "errors")
    for j in jobs:
        table.add_row(j.obj, j.state.value, j.trigger,
                      "; ".join(e["message"] for e in j.errors))
    console.print(table)
