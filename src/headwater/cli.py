"""The `headwater` command line: run a connector, look at topics and offsets."""

from __future__ import annotations

import gc
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer
from rich.console import Console

from headwater.ops.cli_errors import HeadwaterGroup, UserError
from headwater.ops.logging import setup_logging

if TYPE_CHECKING:
    from headwater.config.kafka import KafkaSettings
    from headwater.connectors.registry import CaptureConfig
    from headwater.topics.check import TopicCheck

app = typer.Typer(cls=HeadwaterGroup, add_completion=False, no_args_is_help=True, help=__doc__,
                  pretty_exceptions_enable=False)


def _version(value: bool) -> None:
    if value:
        from headwater import __version__

        console.print(f"headwater {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="print the version and exit")
        ] = False,
        debug: Annotated[bool, typer.Option(
            "--debug", envvar="HEADWATER_DEBUG", help="show the Python traceback of an "
            "unexpected error (a bug) instead of its one-line summary")] = False) -> None:
    """Change data capture: connectors, topics, offsets, streams, the REST service."""
topics_app = typer.Typer(no_args_is_help=True, help="Inspect the local topic log.")
offsets_app = typer.Typer(no_args_is_help=True, help="Inspect a connector's stored offsets.")
app.add_typer(topics_app, name="topics")
app.add_typer(offsets_app, name="offsets")


def _add_stream_commands() -> None:
    from headwater.streams.cli import profiles_app, streams_app

    app.add_typer(streams_app, name="streams")
    app.add_typer(profiles_app, name="profiles")


_add_stream_commands()

console = Console(highlight=False)
err = Console(stderr=True, highlight=False)
log = logging.getLogger("headwater.cli")

ConfigArg = Annotated[
    Path, typer.Argument(help="connector configuration (.properties, .yaml, .json)")
]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="take the topic log dir from a config")
]
DirOpt = Annotated[Path | None, typer.Option("--dir", help="topic log directory")]


def _level(value: str) -> str:
    """--log-level: a level name Python's logging knows (checked before anything starts)."""
    if value.upper() not in ("CRITICAL", "ERROR", "WARNING", "WARN", "INFO", "DEBUG"):
        raise typer.BadParameter(f"{value!r} is not a log level: use DEBUG, INFO, WARNING, "
                                 "ERROR or CRITICAL")
    return value


LogLevelOpt = Annotated[str, typer.Option(
    "--log-level", help="DEBUG, INFO, WARNING, ERROR", callback=_level)]


LogFormatOpt = Annotated[str | None, typer.Option(
    "--log-format", help="text (Debezium's layout) or json (one object per line); default "
                         "$HEADWATER_LOG_FORMAT or text")]


def _setup_logging(level: str, fmt: str | None) -> None:
    import os

    from headwater.ops.logging import FORMAT_ENV, log_format

    try:
        chosen = setup_logging(level, log_format(fmt))
    except ValueError as exc:
        raise UserError(f"--log-format: {exc}", 2) from None
    os.environ[FORMAT_ENV] = chosen  # the service's workers, Spark's Python side


def _config_exit(config: Path, exc: Exception) -> typer.Exit:
    """Print the configuration problems (one line for one problem); exit status 2."""
    from headwater.ops.cli_errors import config_failure

    typer.echo(config_failure(config, exc), err=True)
    return typer.Exit(2)


def _load(config: Path, *, secrets: bool = True) -> CaptureConfig:
    """The connector configuration `connector.class` selects (exit 2 with the problems);
    `secrets=False` for commands that never connect (they must work where the database
    password is not available)."""
    from headwater.capture import load_connector_config
    from headwater.config import ConfigError

    try:
        cfg = load_connector_config(config, secrets=secrets)
    except (ConfigError, OSError) as exc:
        raise _config_exit(config, exc) from None
    return cfg


@app.command()
def run(
    config: ConfigArg,
    log_level: LogLevelOpt = "INFO",
    log_format: LogFormatOpt = None,
) -> None:
    """Run a connector until stopped (Ctrl-C or SIGTERM stop it gracefully, flushing)."""
    _setup_logging(log_level, log_format)
    cfg = _load(config)
    from headwater.ops.config_log import log_configuration

    log_configuration(cfg, log)
    from headwater.capture import build_runtime
    from headwater.config import ConfigError
    from headwater.engine.offsets import OffsetStoreError
    from headwater.ops.store_views import remove_if_unused
    from headwater.state_format import StateFormatError
    from headwater.topics.log import TopicLogError

    # A run that fails before writing anything must not leave behind a topics directory it
    # created: a pipeline would take it for an empty log and start on nothing.
    topics_root = Path(cfg.headwater_topics_dir)
    fresh = not topics_root.exists()

    def forget_fresh() -> None:
        if fresh:
            remove_if_unused(topics_root)

    try:
        runtime = build_runtime(cfg)
    except ConfigError as exc:  # transforms / converters are checked when the runtime is built
        forget_fresh()
        raise _config_exit(config, exc) from None
    except (TopicLogError, OffsetStoreError, StateFormatError) as exc:
        # e.g. a second `headwater run` on the same topics directory, or a topic log a newer
        # Headwater wrote: the message says it all.
        forget_fresh()
        raise UserError(f"cannot start {cfg.topic_prefix}: {exc}") from None
    except Exception:
        forget_fresh()
        raise
    # The capture's reader and writer threads are both CPU-bound and share the GIL: switching
    # every 5 ms (the default) costs more than it buys (measured: ~5-10% throughput).
    sys.setswitchinterval(0.02)
    # The cyclic GC, tuned for the capture: thousands of events wait in the queue, so they
    # survive young collections and older ones come often, each walking every object of the
    # process, the start-up's modules and classes too.  Those are frozen out of its reach, and
    # collections come after 50,000 allocations (700 by default): events hold no cycles.
    # Measured with bench/capture_vs_pg_recvlogical.py (200k changes, schemas on): the
    # capture's user CPU 6.5 s before, 4.2 s after.
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)

    def _stop(signum: int, _frame: Any) -> None:
        log.info("received %s", signal.Signals(signum).name)
        runtime.stop()

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    from headwater.ops.progress import CaptureMonitor, status_path

    monitor = CaptureMonitor(
        runtime.metrics, lambda: runtime.state.value, cfg.topic_prefix,
        status_path(Path(cfg.offset_storage_file_filename)), console=err,
    ).start()
    try:
        runtime.run()
    except Exception as exc:
        log.error("connector %s failed: %s", cfg.topic_prefix, exc)
        forget_fresh()
        raise typer.Exit(1) from exc
    finally:
        monitor.stop()


def _port(value: int) -> int:
    if not 1 <= value <= 65535:
        raise typer.BadParameter(f"{value} is not a TCP port (1 to 65535)")
    return value


ReadableFile = {"exists": True, "dir_okay": False, "readable": True, "resolve_path": True}


@app.command()
def serve(
    port: Annotated[int, typer.Option("--port", callback=_port, help="HTTP(S) port")] = 8083,
    data_dir: Annotated[Path, typer.Option(
        "--data-dir", envvar="HEADWATER_DATA_DIR", file_okay=False, help="catalog, "
        "connectors' offsets and topics")] = Path("headwater-data"),
    host: Annotated[str, typer.Option("--host", help="address to listen on")] = "127.0.0.1",
    token: Annotated[str | None, typer.Option(
        "--token", envvar="HEADWATER_TOKEN", help="require this Bearer token")] = None,
    token_file: Annotated[Path | None, typer.Option(
        "--token-file", **ReadableFile, help="read the Bearer token from this file")] = None,
    tls_cert: Annotated[Path | None, typer.Option(
        "--tls-cert", **ReadableFile, help="PEM certificate")] = None,
    tls_key: Annotated[Path | None, typer.Option(
        "--tls-key", **ReadableFile, help="PEM private key")] = None,
    log_level: LogLevelOpt = "WARNING",
    log_format: LogFormatOpt = None,
) -> None:
    """Run many connectors and streams in one service with a Kafka Connect-compatible REST
    API (docs/server.md); Ctrl-C stops every connector cleanly."""
    from headwater.extras import require

    require("server", "headwater serve")  # before the data directory is created
    if token is not None and token_file is not None:
        raise UserError("--token and --token-file exclude each other", 2)
    if token_file is not None:
        token = token_file.read_text().strip()
    if token == "":
        where = f" (--token-file {token_file})" if token_file is not None else ""
        raise UserError(f"the token is empty{where}", 2)
    if (tls_cert is None) != (tls_key is None):
        raise UserError("--tls-cert and --tls-key go together", 2)
    from headwater.ops.logging import log_format as chosen_format

    try:
        chosen_format(log_format)
    except ValueError as exc:
        raise UserError(f"--log-format: {exc}", 2) from None
    if tls_cert is not None and tls_key is not None:
        _check_tls(tls_cert, tls_key)
    _check_listen(host, port)
    from headwater.server.serve import serve as run_service
    from headwater.server.service import DataDirInUse

    try:
        code = run_service(host=host, port=port, data_dir=data_dir, token=token,
                           tls_cert=tls_cert, tls_key=tls_key, log_level=log_level,
                           log_format=log_format)
    except DataDirInUse as exc:
        raise UserError(str(exc)) from None
    raise typer.Exit(code)


def _check_tls(cert: Path, key: Path) -> None:
    """The certificate and key load together, before the service starts anything."""
    import ssl

    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        raise UserError(f"--tls-cert {cert} / --tls-key {key}: not a PEM certificate and its "
                        f"private key ({exc.reason or exc})", 2) from None


def _check_listen(host: str, port: int) -> None:
    """The address can be listened on (taken, or not an address of this machine: say so
    now rather than after the connectors started)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise UserError(f"--host {host}: {exc.strerror}", 2) from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            raise UserError(f"--host {host} --port {port}: cannot listen ({exc.strerror})"
                            ) from None


@app.command()
def status(
    config: ConfigArg,
    pipeline: Annotated[bool, typer.Option(
        "--pipeline", help="the pipeline's status (the default for a file without "
        "connector.class)")] = False,
) -> None:
    """Show a connector's (or pipeline's) state and metrics, as its `headwater run` (or
    `headwater pipeline`) last wrote them, and whether that process is still alive (exit 0)
    or not (exit 1)."""
    from headwater.ops.progress import read_status, status_path
    from headwater.ops.status import liveness

    if pipeline or not _has_connector_class(config):
        _pipeline_status(config)
        return
    cfg = _load(config, secrets=False)
    from headwater.engine.offsets import OffsetStoreError, read_offset_file

    try:
        # The status describes the connector's state: one a newer Headwater wrote (or a
        # damaged offset file) is said, not shown as if this release could resume it.
        read_offset_file(Path(cfg.offset_storage_file_filename))
    except OffsetStoreError as exc:
        raise UserError(str(exc)) from None
    path = status_path(Path(cfg.offset_storage_file_filename))
    try:
        doc = read_status(path)
    except ValueError as exc:  # orjson's JSONDecodeError: a damaged file
        raise UserError(f"status file {path} is damaged (not JSON: {exc})") from None
    if doc is None:
        console.print(f"no status at {path} (has `headwater run` started?)")
        raise typer.Exit(1)
    if not isinstance(doc, dict) or not isinstance(doc.get("metrics"), dict) or not all(
            k in doc for k in ("connector", "pid", "state", "updated_ms")):
        raise UserError(f"status file {path} is damaged (not a connector status written by "
                        "`headwater run`)")
    m = doc["metrics"]
    live = liveness(doc)
    if live.alive:
        console.print(f"connector {doc['connector']}: {live.state} (pid {doc['pid']}, "
                      f"heartbeat {live.age_s:.0f}s ago)", soft_wrap=True)
    else:
        console.print(f"connector {doc['connector']}: {live.state}: {live.reason}; "
                      f"last heartbeat {live.age_s:.0f}s ago; the metrics below are the last "
                      "it wrote", soft_wrap=True)
    snap = ("running" if m["SnapshotRunning"] else "completed" if m["SnapshotCompleted"]
            else "aborted" if m["SnapshotAborted"] else "not run")
    console.print(f"snapshot: {snap}, {m['SnapshotDurationInSeconds']}s, "
                  f"{m['RemainingTableCount']} of {m['TotalTableCount']} tables remaining")
    if m["RowsScanned"]:
        from rich.table import Table

        table = Table("table", "rows scanned", "estimated rows")
        for name, rows in m["RowsScanned"].items():
            est = doc.get("rows_estimated", {}).get(name, -1)
            table.add_row(name, str(rows), str(est) if est >= 0 else "?")
        console.print(table)
    console.print_json(orjson.dumps(m).decode())
    if not live.alive:
        raise typer.Exit(1)


@app.command()
def check(
    config: ConfigArg,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Check a configuration without running it -- a connector's (with its transforms,
    converters, Kafka settings and Debezium Server keys) and, when it has headwater.pipeline.*
    keys or no connector.class, a pipeline's -- and exit 2 on any problem.  The REST API's
    config/validate answers the same problems."""
    from headwater.capture import check_connector
    from headwater.config import ConfigError
    from headwater.config.loader import load_properties
    from headwater.pipeline.config import load_pipeline_config

    kinds: list[str] = []
    problems: list[str] = []
    try:
        props = load_properties(config)
    except ConfigError as exc:
        problems = list(exc.problems)
    else:
        # database.* without connector.class: a connector's file that forgot its class.
        connector = "connector.class" in props or any(k.startswith("database.") for k in props)
        if connector:
            kinds.append("connector")
            problems += check_connector(config)
        if not connector or any(k.startswith("headwater.pipeline.") for k in props):
            kinds.append("pipeline")
            try:
                load_pipeline_config(config)
            except ConfigError as exc:
                problems += [p for p in exc.problems if p not in problems]
    if as_json:
        sys.stdout.write(orjson.dumps({"file": str(config), "kinds": kinds,
                                       "problems": problems}).decode() + "\n")
    elif problems:
        for problem in problems:
            typer.echo(problem if problem.startswith(str(config)) else f"{config}: {problem}")
    else:
        typer.echo(f"{config}: ok ({' and '.join(kinds)})")
    if problems:
        raise typer.Exit(2)


def _has_connector_class(config: Path) -> bool:
    from headwater.config.loader import load_properties

    try:
        return bool(load_properties(config).get("connector.class"))
    except (ValueError, OSError):
        return True  # let the connector's loader say what is wrong


def _pipeline_status(config: Path) -> None:
    from headwater.config import ConfigError
    from headwater.pipeline.config import load_pipeline_config
    from headwater.pipeline.status import pipeline_status_path
    from headwater.pipeline.status_print import print_pipeline_status

    try:
        cfg = load_pipeline_config(config)
    except (ConfigError, OSError) as exc:
        raise _config_exit(config, exc) from None
    from headwater.pipeline.checkpoint import check_checkpoint

    check_checkpoint(cfg.checkpoint_dir)  # StateFormatError: one line (cli_errors)
    path = pipeline_status_path(cfg.checkpoint_dir)
    try:
        shown = print_pipeline_status(path, console)
    except ValueError as exc:  # orjson's JSONDecodeError: a damaged file
        raise UserError(f"pipeline status file {path} is damaged (not JSON: {exc})") from None
    except (KeyError, TypeError, AttributeError) as exc:
        raise UserError(f"pipeline status file {path} is damaged (not a status written by "
                        f"`headwater pipeline`: {type(exc).__name__} {exc})") from None
    if not shown:
        raise typer.Exit(1)


@app.command()
def pipeline(
    config: ConfigArg,
    once: Annotated[
        bool, typer.Option("--once", help="process what is there now, then stop")
    ] = False,
    log_level: LogLevelOpt = "INFO",
    log_format: LogFormatOpt = None,
) -> None:
    """Materialize the change topics into Delta tables with Spark (SCD1, changelog)."""
    _setup_logging(log_level, log_format)
    from headwater.config import ConfigError
    from headwater.pipeline.config import load_pipeline_config
    from headwater.pipeline.runner import run as run_pipeline

    try:
        cfg = load_pipeline_config(config)
    except (ConfigError, OSError) as exc:
        raise _config_exit(config, exc) from None
    from headwater.extras import require
    from headwater.pipeline.checkpoint import check_checkpoint
    from headwater.state_format import TOPIC_LOG, open_state_dir

    files = cfg.source == "datastream-files"
    # The formats of what it reads and resumes from, before anything is created or started
    # (StateFormatError: one line, cli_errors); the run stamps its checkpoint.
    if not files and cfg.kafka is None:
        open_state_dir(cfg.topics_dir, TOPIC_LOG, stamp=False)
    check_checkpoint(cfg.checkpoint_dir)
    require("spark", "headwater pipeline")
    if cfg.kafka is not None:
        require("kafka", "headwater pipeline reading Kafka")
    read_dir = (cfg.files_dir or cfg.topics_dir) if files else cfg.topics_dir
    if (files or cfg.kafka is None) and not read_dir.is_dir():
        # The pipeline only reads: a missing directory is a wrong path, not an empty log.
        # With headwater.topics.store=kafka the topics are in Kafka: no directory to check.
        prop = ("headwater.pipeline.datastream.files.dir" if files
                else "headwater.topics.dir")
        raise _config_exit(config, ConfigError([
            f"{prop}: directory {read_dir} does not exist (has `headwater run` written to "
            "it?)"]))
    from headwater.pipeline.quiet import (
        NO_SPACE,
        TRACE_LOGGER,
        full_disks,
        log_dir,
        one_line,
        trace_unwritten,
    )

    logs = log_dir(cfg.checkpoint_dir)
    try:
        interrupted = run_pipeline(cfg, once=once)
    except KeyboardInterrupt:  # before the query started (Spark still starting)
        interrupted = True
    except Exception as exc:
        # One line naming the root cause; the whole trace is in the log directory.
        cause = one_line(exc)
        if NO_SPACE in cause or NO_SPACE in str(exc):
            written = {"headwater.pipeline.checkpoint.dir": cfg.checkpoint_dir}
            if cfg.target == "delta":
                written["headwater.pipeline.delta.path"] = cfg.delta_path
            full = full_disks(written)
            cause = (f"{NO_SPACE}: " + "; ".join(full)) if full else cause
        unwritten = trace_unwritten(logging.getLogger(TRACE_LOGGER))
        where = (f"full trace in {logs / 'pipeline.log'}" if unwritten is None
                 else f"the trace could not be written to {logs / 'pipeline.log'}: "
                      f"{unwritten}")
        err.print(f"[red]headwater pipeline failed:[/red] {cause} ({where})", soft_wrap=True,
                  highlight=False)
        raise typer.Exit(1) from None
    if interrupted:
        err.print(f"headwater pipeline: stopped (checkpoint in {cfg.checkpoint_dir}; Spark's "
                  f"log in {logs / 'spark.log'})", soft_wrap=True, highlight=False)


@app.command()
def validate(
    config: ConfigArg,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
    table: Annotated[list[str] | None, typer.Option(
        "--table", help="only this target (schema.table); repeatable")] = None,
    chunk_rows: Annotated[int, typer.Option(help="key range / bucket size")] = 100_000,
    rechecks: Annotated[int, typer.Option(
        help="re-compare differing chunks this many times (capture running)")] = 2,
    recheck_wait: Annotated[float, typer.Option(help="seconds between rechecks")] = 5.0,
    max_rows: Annotated[int, typer.Option(help="differing rows listed per table")] = 100,
) -> None:
    """Compare each captured table with its pipeline target (counts, chunk checksums, then
    the differing keys and columns); exit 1 when anything differs."""
    from headwater.config import ConfigError
    from headwater.pipeline.config import load_pipeline_config
    from headwater.validate.compare import Options, render
    from headwater.validate.run import check_pipeline, dialect_of
    from headwater.validate.run import validate as run_validate

    if chunk_rows < 1 or rechecks < 0 or recheck_wait < 0 or max_rows < 0:
        raise UserError("--chunk-rows must be >= 1; --rechecks, --recheck-wait and "
                        "--max-rows >= 0", 2)
    connector = _load(config)
    try:
        dialect_of(connector)  # SQL Server, MongoDB, ...: refused by name before anything
        pipeline_cfg = load_pipeline_config(config)
        check_pipeline(pipeline_cfg, str(config))
        results, problems = run_validate(
            connector, pipeline_cfg, Options(chunk_rows, rechecks, recheck_wait, max_rows),
            tuple(table or ()))
    except (ConfigError, OSError) as exc:
        raise _config_exit(config, exc) from None
    except Exception as exc:  # the database or a table could not be read: say which
        detail = " ".join(str(exc).split())  # drivers' messages span lines (libpq's hint)
        raise UserError(f"validate failed: {type(exc).__name__}: {detail}", 2) from None
    if as_json:
        sys.stdout.write(orjson.dumps({
            "equal": not problems and all(r.equal for r in results),
            "tables": [r.as_dict() for r in results], "problems": problems,
        }, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        for r in results:
            for line in render(r):
                console.print(line, soft_wrap=True, markup=False)
        for problem in problems:
            console.print(f"NOT COMPARED: {problem}", soft_wrap=True, markup=False)
    if problems or not all(r.equal for r in results):
        raise typer.Exit(1)


def _topic_store(config: Path | None, directory: Path | None
                 ) -> tuple[Path, str] | tuple[KafkaSettings, str]:
    """Where the topics are, and what said so: `--dir`, else the configuration's store (its
    `headwater.topics.dir`, or Kafka with headwater.topics.store=kafka), else data/topics.
    For Kafka the second item is the connector's topic.prefix."""
    if directory is not None:
        return directory, "--dir"
    if config is None:
        return Path("data/topics"), "the default; give --dir or --config"
    from headwater.kafka import assembly as kafka_assembly

    cfg = _load(config, secrets=False)
    try:
        settings = kafka_assembly.settings_of(cfg)
    except ValueError as exc:  # ConfigError
        raise _config_exit(config, exc) from None
    if settings.store == "kafka":
        return settings, cfg.topic_prefix
    return Path(cfg.headwater_topics_dir), f"headwater.topics.dir of {config}"


def _topics_dir(config: Path | None, directory: Path | None, command: str) -> Path:
    """The local topic log directory, which must exist (`command` cannot read Kafka)."""
    from headwater.ops.store_views import existing_topics_dir, kafka_place

    where, named_by = _topic_store(config, directory)
    if not isinstance(where, Path):
        raise UserError(f"{config}: the topics are in {kafka_place(where)} "
                        f"(headwater.topics.store=kafka); `headwater topics {command}` reads "
                        "a local topic log: use a Kafka consumer", 2)
    return existing_topics_dir(where, named_by)


def _damaged(exc: Exception) -> typer.Exit:
    """The one message of a damaged topic log (`TopicLogDamaged`), and exit status 1."""
    from rich.text import Text

    err.print(Text(str(exc), style="red"), soft_wrap=True)  # (paths are not markup)
    return typer.Exit(1)


@topics_app.command("list")
def topics_list(
    config: ConfigOpt = None,
    directory: DirOpt = None,
) -> None:
    """List the topics with their offsets, record counts and sizes."""
    from rich.table import Table

    from headwater.ops.store_views import existing_topics_dir, kafka_place, kafka_topics
    from headwater.topics.reader import CorruptSegmentError, list_topics

    where, named_by = _topic_store(config, directory)
    if not isinstance(where, Path):
        found = kafka_topics(where, named_by)
        console.print(f"topics of {named_by} in {kafka_place(where)}: {len(found)}",
                      soft_wrap=True, markup=False)
        kafka_table = Table("topic", "partitions", "start", "end", "records")
        for k in found:
            kafka_table.add_row(k.name, str(k.partitions), str(k.start), str(k.end),
                                str(k.records))
        console.print(kafka_table)
        return
    root = existing_topics_dir(where, named_by)
    table = Table("topic", "start", "end", "records", "bytes", "segments")
    try:
        infos = list_topics(root)
    except CorruptSegmentError as exc:
        raise _damaged(exc) from None
    console.print(f"topics under {root}: {len(infos)}", soft_wrap=True, markup=False)
    for t in infos:
        table.add_row(t.name, str(t.start_offset), str(t.end_offset), str(t.record_count),
                      str(t.size_bytes), str(t.segment_count))
    console.print(table)


@topics_app.command("tail")
def topics_tail(
    topic: Annotated[str, typer.Argument(help="topic name, e.g. inventory.public.customers")],
    from_beginning: Annotated[
        bool, typer.Option("--from-beginning", help="start at offset 0 instead of the end")
    ] = False,
    pretty: Annotated[
        bool, typer.Option("--pretty", help="show op, key and before/after readably")
    ] = False,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="keep waiting for new records")
    ] = False,
    config: ConfigOpt = None,
    directory: DirOpt = None,
    limit: Annotated[int | None, typer.Option("--limit", "-n", help="stop after N records")] = None,
) -> None:
    """Print a topic's records (like kafka-console-consumer)."""
    from headwater.converters.headers import header_value
    from headwater.ops.pretty import format_record
    from headwater.topics import reader
    from headwater.topics.segment import list_topic_names

    root = _topics_dir(config, directory, "tail")
    known = list_topic_names(root)
    if topic not in known:
        names = ", ".join(known) if known else "none"
        if not follow:
            err.print(f"[red]no topic {topic!r}[/red] under {root}; known topics: {names}",
                      soft_wrap=True)
            raise typer.Exit(1)
        err.print(f"no topic {topic!r} under {root} yet (known topics: {names}); waiting for it",
                  soft_wrap=True)
    n = 0
    try:
        start = 0
        if not from_beginning and topic in known:
            start = {t.name: t for t in reader.list_topics(root)}[topic].end_offset
        records = reader.follow(root, topic, from_offset=start) if follow else reader.read(
            root, topic, from_offset=start)
        for rec in records:
            if pretty:
                console.print(format_record(rec))
            else:
                doc: dict[str, Any] = {
                    "offset": rec.offset, "timestamp": rec.timestamp,
                    "key": orjson.loads(rec.key) if rec.key is not None else None,
                    "value": orjson.loads(rec.value) if rec.value is not None else None,
                }
                if rec.headers:
                    # Either header converter's form, read as its value (the last of a name).
                    doc["headers"] = {name: header_value(raw) for name, raw in rec.headers}
                sys.stdout.write(orjson.dumps(doc, default=str).decode() + "\n")
            n += 1
            if limit is not None and n >= limit:
                break
    except KeyboardInterrupt:
        pass
    except reader.CorruptSegmentError as exc:
        sys.stdout.flush()
        raise _damaged(exc) from None


@topics_app.command("verify")
def topics_verify(
    config: Annotated[Path | None, typer.Argument(
        help="connector configuration (.properties, .yaml, .json) naming the topic log dir")
    ] = None,
    directory: DirOpt = None,
    repair: Annotated[bool, typer.Option(
        "--repair", help="cut each damaged topic back to its last good record (the removed "
        "bytes are kept in .damaged files); stop the connector first")] = False,
) -> None:
    """Read every record of every topic and check offsets and framing; exit 1 on damage."""
    from headwater.topics.check import check_topic
    from headwater.topics.log import TopicLogLockedError
    from headwater.topics.repair import Removal, repair_topic
    from headwater.topics.segment import list_topic_names

    root = _topics_dir(config, directory, "verify")
    names = list_topic_names(root)
    if not names:
        console.print(f"no topics under {root}")
    damaged = 0
    for name in names:
        removals: list[Removal] = []
        if repair:
            try:
                check, removals = repair_topic(root, name)
            except TopicLogLockedError as exc:
                err.print(f"[red]{exc}[/red]: stop it before repairing", soft_wrap=True)
                raise typer.Exit(1) from None
        else:
            check = check_topic(root, name)
        _report_topic(check)
        if check.damages and not removals:
            damaged += 1
        for removal in removals:
            console.print(f"  repaired: {removal.describe()}", soft_wrap=True)
        if removals:
            console.print(f"  note: the next record appended to {name} gets offset "
                          f"{removals[0].first_offset} again; a consumer that read past it (a "
                          "pipeline checkpoint) must be reset, or it skips the new records up "
                          "to where it was",
                          soft_wrap=True)
        if removals:
            after = check_topic(root, name)
            if after.damages:
                damaged += 1
                _report_topic(after)
    if damaged:
        err.print(f"[red]{damaged} damaged topic(s)[/red]" + (
            "" if repair else "; `headwater topics verify --repair` cuts them back to their "
            "last good record"), soft_wrap=True)
        raise typer.Exit(1)


def _report_topic(check: TopicCheck) -> None:
    segs = check.segments
    records = sum(s.records for s in segs if s.damage is None)
    if not check.damages:
        tail = sum(s.crash_tail for s in segs)
        note = (f"; {tail} bytes of a crashed writer's torn tail, which its restart removes"
                if tail else "")
        console.print(f"{check.topic}: ok, {records} records in {len(segs)} segments{note}",
                      soft_wrap=True)
        return
    for d in check.damages:
        console.print(f"{check.topic}: DAMAGED: segment {d.segment}, offset {d.offset}, "
                      f"byte {d.position}: {d.problem}", soft_wrap=True)


@offsets_app.command("show")
def offsets_show(config: ConfigArg) -> None:
    """Show the stored source offset of a connector."""
    from headwater.engine.offsets import FileOffsetStore
    from headwater.kafka import assembly as kafka_assembly

    cfg = _load(config, secrets=False)
    try:
        settings = kafka_assembly.settings_of(cfg)
    except ValueError as exc:  # ConfigError
        raise _config_exit(config, exc) from None
    partition = {"server": cfg.topic_prefix}
    if settings.offset_topic is not None:
        from headwater.ops.store_views import kafka_offset, kafka_place

        where = f"offsets topic {settings.offset_topic} in {kafka_place(settings)}"
        found = kafka_offset(settings, partition)
        if found is None:
            console.print(f"no offsets stored yet for {settings.connector_name} in {where}",
                          soft_wrap=True, markup=False)
            return
        console.print_json(orjson.dumps({
            "topic": settings.offset_topic,
            "bootstrap.servers": settings.common.get("bootstrap.servers"),
            "connector": settings.connector_name, "partition": partition,
            "offset": found}).decode())
        return
    store = FileOffsetStore(Path(cfg.offset_storage_file_filename), partition)
    from headwater.engine.offsets import OffsetStoreError

    try:
        offset = store.load()
    except OffsetStoreError as exc:
        raise UserError(str(exc)) from None
    if offset is None:
        console.print(f"no offsets stored yet at {store.path}", soft_wrap=True, markup=False)
        return
    console.print_json(orjson.dumps({"file": str(store.path), "partition": store.partition,
                                     "offset": offset}).decode())


def main() -> None:
    app()


if __name__ == "__main__":
    main()
