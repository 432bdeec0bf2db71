"""The catalog across processes, profiles' masking, and the translation of include/exclude
objects into Debezium's lists (checked by what the connector's own filter admits)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from headwater.cli import app
from headwater.config.connector_common import NameFilter
from headwater.streams.catalog import Catalog, CatalogError
from headwater.streams.model import ObjectRef, StreamSpec
from headwater.streams.profiles import MASK, ProfileError, destination_profile, source_profile
from headwater.streams.states import Action, State, TransitionError
from headwater.streams.translate import connector_properties, object_filters, write_config

PG = {"database.hostname": "h", "database.user": "u", "database.dbname": "d",
      "database.password": "hunter2"}


def _spec(include: list[str], exclude: list[str]) -> StreamSpec:
    return StreamSpec("s", "src", "dst", tuple(map(ObjectRef.parse, include)),
                      tuple(map(ObjectRef.parse, exclude)))


def _admits(props: dict[str, str], kind: str, name: str) -> bool:
    inc = [p for p in props.get(f"{kind}.include.list", "").split(",") if p]
    exc = [p for p in props.get(f"{kind}.exclude.list", "").split(",") if p]
    return NameFilter(inc, exc).admits(name)


@pytest.mark.parametrize(("include", "exclude", "table", "admitted"), [
    ([], [], "public.t", True),
    ([], ["public.audit"], "public.audit", False),
    ([], ["public.audit"], "public.orders", True),
    ([], ["public"], "public.orders", False),
    (["public"], [], "public.orders", True),
    (["public"], [], "other.orders", False),
    (["public"], ["public.audit"], "public.audit", False),
    (["public"], ["public.audit"], "public.audit2", True),
    (["public.orders"], [], "public.orders", True),
    (["public.orders"], [], "public.orders_x", False),
    (["public.orders.id"], [], "public.orders", True),
    (['"my.schema".t'], [], "my.schema.t", True),
    (['"my.schema".t'], [], "myXschema.t", False),
])
def test_table_filters(include: list[str], exclude: list[str], table: str,
                       admitted: bool) -> None:
    assert _admits(object_filters(_spec(include, exclude)), "table", table) is admitted


@pytest.mark.parametrize(("include", "exclude", "column", "admitted"), [
    ([], ["public.c.ssn"], "public.c.ssn", False),
    ([], ["public.c.ssn"], "public.c.name", True),
    (["public.o.id", "public.o.total"], [], "public.o.id", True),
    (["public.o.id", "public.o.total"], [], "public.o.note", False),
    (["public.o.id", "public"], [], "public.c.anything", True),
    (["public.o.id", "public"], ["public.c.ssn"], "public.c.ssn", False),
    (["public.o.id", "public"], ["public.c.ssn"], "public.c.name", True),
])
def test_column_filters(include: list[str], exclude: list[str], column: str,
                        admitted: bool) -> None:
    assert _admits(object_filters(_spec(include, exclude)), "column", column) is admitted


def test_backfill_strategy_and_destination(tmp_path: Path) -> None:
    src = source_profile("src", "postgresql", PG)
    topics = destination_profile("dst", "topics", str(tmp_path / "t"))
    spec = StreamSpec("s", "src", "dst", backfill="none")
    props = connector_properties(spec, src, topics, tmp_path)
    assert props["snapshot.mode"] == "no_data"
    assert props["headwater.topics.dir"] == str((tmp_path / "t" / "s").resolve())
    assert props["signal.enabled.channels"] == "file" and props["read.only"] == "true"
    files = destination_profile("f", "files", str(tmp_path / "f"), "avro")
    props = connector_properties(StreamSpec("s", "src", "f"), src, files, tmp_path)
    assert props["snapshot.mode"] == "initial"
    assert (props["headwater.destination"], props["headwater.destination.files.format"]) == (
        "files", "avro")
    # The capture's own loader accepts the translation (names agree with config/output.py).
    from headwater.capture import load_connector_config
    loaded = load_connector_config(write_config(tmp_path / "files.json", props))
    output = loaded.output  # type: ignore[attr-defined]
    assert (output.event_format, output.destination, output.files_format,
            output.stream_name) == ("datastream", "files", "avro", "s")


def test_profiles_validate_and_mask() -> None:
    with pytest.raises(ProfileError, match=r"database\.dbname"):
        source_profile("p", "postgresql", {"database.hostname": "h", "database.user": "u"})
    with pytest.raises(ProfileError, match="unknown source kind"):
        source_profile("p", "oracle", {})
    p = source_profile("p", "mariadb", {"database.hostname": "h", "database.user": "u",
                                        "database.password": "pw"})
    assert p.kind == "mysql" and p.properties["database.port"] == "3306"
    rendered = orjson.dumps(p.rendered()).decode()
    assert "pw" not in rendered.replace("password", "") and MASK in rendered


def test_catalog_survives_a_process_restart(tmp_path: Path) -> None:
    cat = Catalog(tmp_path)
    cat.add_profile(source_profile("src", "postgresql", PG))
    cat.add_profile(destination_profile("dst", "topics", str(tmp_path / "t")))
    cat.create_stream(_spec(["public.orders"], ["public.orders.ssn"]))
    cat.transition("s", Action.START)
    cat.add_error("s", "CONNECTION_FAILED", "refused", {"host": "h"})
    cat.close()
    # Another process reads it, moves the stream, and this one sees the change.
    code = (
        "import sys; from pathlib import Path; from headwater.streams.catalog import Catalog;"
        "from headwater.streams.states import Action;"
        "c = Catalog(Path(sys.argv[1])); r = c.stream('s');"
        "assert r.state.value == 'STARTING', r.state;"
        "assert [str(x) for x in r.spec.include] == ['public.orders'];"
        "assert c.errors('s')[0].details == {'host': 'h'};"
        "c.transition('s', Action.STARTED)")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True,
                   env={"PYTHONPATH": str(Path(__file__).resolve().parents[3] / "src")})
    cat = Catalog(tmp_path)
    assert cat.stream("s").state is State.RUNNING
    assert [h["to"] for h in cat.history("s")] == ["NOT_STARTED", "STARTING", "RUNNING"]
    with pytest.raises(TransitionError, match="RUNNING"):
        cat.transition("s", Action.START)
    with pytest.raises(CatalogError, match="already exists"):
        cat.create_stream(_spec([], []))
    with pytest.raises(CatalogError, match="used by"):
        cat.delete_profile("src")


def test_cli_profiles_and_streams(tmp_path: Path) -> None:
    runner = CliRunner()
    d = ["--data-dir", str(tmp_path)]

    def run(*args: str, code: int = 0) -> str:
        result = runner.invoke(app, [*args, *d])
        assert result.exit_code == code, result.output
        return result.output

    run("profiles", "create", "src", "--kind", "postgresql", "-p", "database.hostname=h",
        "-p", "database.user=u", "-p", "database.dbname=d", "-p", "database.password=hunter2")
    run("profiles", "create", "dst", "--kind", "topics", "--dir", str(tmp_path / "t"))
    run("profiles", "create", "bad", "--kind", "postgresql", code=2)
    listed = orjson.loads(run("profiles", "list", "--json"))
    assert [p["name"] for p in listed["connectionProfiles"]] == ["dst", "src"]
    assert "hunter2" not in run("profiles", "list", "--json")
    doc = orjson.loads(run("streams", "create", "s1", "--source", "src", "--destination",
                           "dst", "--include", "public.orders", "--backfill", "none",
                           "--json"))
    assert doc["state"] == "NOT_STARTED" and "backfillNone" in doc
    assert doc["sourceConfig"]["postgresqlSourceConfig"]["includeObjects"] == {
        "postgresqlSchemas": [{"schema": "public", "postgresqlTables": [{"table": "orders"}]}]}
    run("streams", "create", "s1", "--source", "src", "--destination", "dst", code=2)
    run("streams", "create", "s2", "--source", "dst", "--destination", "dst", code=2)
    out = run("streams", "pause", "s1", code=2)
    assert "NOT_STARTED" in out and "pause" in out
    described = orjson.loads(run("streams", "describe", "s1", "--json"))
    assert described["connectorConfig"]["database.password"] == MASK
    assert described["connectorConfig"]["table.include.list"] == "public\\.orders"
    assert orjson.loads(run("streams", "errors", "s1", "--json")) == {"errors": []}
    listed = orjson.loads(run("streams", "list", "--json"))
    assert [(s["name"], s["state"]) for s in listed["streams"]] == [("s1", "NOT_STARTED")]
    # A backfill job is checked on the source first: an unreachable one says so, and
    # nothing is queued unchecked.
    out = run("streams", "backfill", "s1", "public.orders", "--where", "id > 10", code=2)
    assert "backfill of public.orders: cannot check the object on the source" in out
    assert not (tmp_path / "streams" / "s1" / "signals.jsonl").exists()
    from headwater.streams.backfill import start_backfill

    signal = start_backfill(tmp_path, "s1", ObjectRef("public", "orders"), "id > 10")
    assert signal["data"]["additional-conditions"] == [
        {"data-collection": "public.orders", "filter": "id > 10"}]
    run("streams", "delete", "s1")
    assert orjson.loads(run("streams", "list", "--json")) == {"streams": []}


MONGO = {"mongodb.connection.string": "mongodb://127.0.0.1:1/?replicaSet=rs0"}


def test_mongodb_stream_translation(tmp_path: Path) -> None:
    """A MongoDB stream: collection lists (not table lists), field exclusions as
    field.exclude.list, an included field refused, no read.only (MongoDB's incremental
    snapshots write their watermarks), and Datastream events into files."""
    src = source_profile("m", "mongo", MONGO)
    assert src.kind == "mongodb"
    files = destination_profile("f", "files", str(tmp_path / "f"))
    spec = StreamSpec("s", "m", "f", include=(ObjectRef("shop"), ObjectRef("crm", "people")),
                      exclude=(ObjectRef("shop", "audit"), ObjectRef("crm", "people", "ssn")))
    props = connector_properties(spec, src, files, tmp_path)
    assert "read.only" not in props and "table.include.list" not in props
    assert props["field.exclude.list"] == "crm.people.ssn"
    include = NameFilter(tuple(props["collection.include.list"].split(",")), ())
    assert [include.admits(n) for n in ("shop.orders", "shop.audit", "crm.people",
                                        "crm.other")] == [True, False, True, False]
    from headwater.capture import load_connector_config
    loaded = load_connector_config(write_config(tmp_path / "m.json", props))
    assert loaded.output.event_format == "datastream"  # type: ignore[attr-defined]
    assert loaded.field_exclude_list == "crm.people.ssn"  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="excludes fields only"):
        connector_properties(StreamSpec("s", "m", "f", include=(
            ObjectRef("crm", "people", "name"),)), src, files, tmp_path)
    topics = destination_profile("t", "topics", str(tmp_path / "t"))
    spec = StreamSpec("s", "m", "t", exclude=(ObjectRef("shop", "audit"),))
    props = connector_properties(spec, src, topics, tmp_path)
    assert props["collection.exclude.list"] == "shop\\.audit"


SQLSERVER = {"database.hostname": "h", "database.user": "u", "database.names": "inv",
             "database.encrypt": "false"}


def test_sqlserver_stream_translation(tmp_path: Path) -> None:
    """A SQL Server stream: `schema.table` lists (what the connector matches inside its
    database), its schema history in the stream's directory, no read.only (the change-table
    connectors refuse it: their watermarks are signal table rows), a configuration the
    connector loads, and the object lists in Datastream's SQL Server shape."""
    from headwater.streams.cli import _render

    src = source_profile("ms", "mssql", SQLSERVER)
    assert src.kind == "sqlserver" and src.properties["database.port"] == "1433"
    with pytest.raises(ProfileError, match="names one database"):
        source_profile("ms", "sqlserver", {**SQLSERVER, "database.names": "a, b"})
    with pytest.raises(ProfileError, match=r"missing database\.names"):
        source_profile("ms", "sqlserver", {"database.hostname": "h", "database.user": "u"})
    topics = destination_profile("t", "topics", str(tmp_path / "t"))
    spec = StreamSpec("s", "ms", "t", include=(ObjectRef("dbo"), ObjectRef("inv", "items",
                                                                           "sku")),
                      exclude=(ObjectRef("dbo", "audit"),))
    props = connector_properties(spec, src, topics, tmp_path)
    assert "read.only" not in props
    assert props["schema.history.internal.file.filename"] == str(
        (tmp_path / "streams" / "s" / "schema-history.jsonl").resolve())
    include = NameFilter(tuple(props["table.include.list"].split(",")), ())
    assert [include.admits(n) for n in ("dbo.orders", "dbo.audit", "inv.items",
                                        "inv.other")] == [True, False, True, False]
    from headwater.capture import load_connector_config
    loaded = load_connector_config(write_config(tmp_path / "ms.json", props))
    assert loaded.database_names == ("inv",)  # type: ignore[attr-defined]
    assert loaded.table_filter("dbo", "orders") and not loaded.table_filter(  # type: ignore[attr-defined]
        "dbo", "audit")
    cat = Catalog(tmp_path / "data")
    cat.add_profile(src)
    cat.add_profile(topics)
    cat.create_stream(spec)
    doc = _render(cat, cat.stream("s"))
    assert doc["sourceConfig"]["sqlServerSourceConfig"] == {
        "includeObjects": {"schemas": [{"schema": "dbo"}, {"schema": "inv", "tables": [
            {"table": "items", "columns": [{"column": "sku"}]}]}]},
        "excludeObjects": {"schemas": [{"schema": "dbo", "tables": [{"table": "audit"}]}]}}
