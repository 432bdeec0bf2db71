"""Headwater's PostgreSQL events against real Debezium 3.x, topic by topic, event by event.

One local PostgreSQL database; Debezium's own PostgreSQL connector (through
headwater.testing.debezium_oracle) and Headwater capture it, each with its own slot and
publication.  Rows written before they start are snapshotted by both (Debezium first, then
Headwater, so both see the same rows); the streamed workload runs once both stream, so both
decode the same WAL.  Covered: every type of the README's "PostgreSQL type mapping" table (the
columns of tests/integration/postgres/test_all_types.py, PostGIS ones when installed) in the
snapshot and the stream, replica identities DEFAULT / FULL / USING INDEX and a keyless table,
unchanged TOAST values, a primary-key change (with its __debezium.oldkey/newkey headers),
TRUNCATE (skipped.operations=none), transaction metadata (provide.transaction.metadata=true),
logical decoding messages (transactional, alone in a transaction, non-transactional).

Then every topic's records are compared pairwise (keys, key/value schemas with field order,
optional, name, version, parameters, doc and default, payloads, headers).  Normalised here,
because they must differ between two captures:

- the envelope's processing time `ts_ms`/`ts_us`/`ts_ns` (when each connector handled the event);
- in snapshot events (op `r`), the source block's `ts_ms`/`ts_us`/`ts_ns`, `lsn`, `txId`,
  `sequence` and `xmin`: the two snapshots are two transactions at two slot consistent points;
- the `__debezium.context.runId` header: a random UUID per connector run.

Any other difference must be explained by a row of docs/compatibility.md's table "Differences
the tests accept", or the test fails naming it.  A second, smaller run checks the modes where
the mapping changes (decimal.handling.mode string/double, time.precision.mode connect,
binary.handling.mode base64).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from headwater.testing.capture_thread import Capture
from headwater.testing.debezium_oracle import DebeziumOracle, OracleRecord, available
from headwater.testing.localpg import LocalPostgres, wait_for
from headwater.topics import reader
from tests.integration.postgres.test_all_types import COLUMNS, POSTGIS_COLUMNS, Col

from .compat import Difference, Rule, diff, load_rules

pytestmark: list[pytest.MarkDecorator] = [pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
COMPAT_DOC = REPO / "docs" / "compatibility.md"
PREFIX = "inv"

_skip = available()
if _skip is not None:
    pytestmark = [pytest.mark.integration, pytest.mark.skip(reason=_skip)]

# ------------------------------------------------------------------------------- the workload

BIG = "repeat(md5(random()::text), 400)"  # ~13 KB, incompressible enough to be TOASTed out


def setup_sql(type_columns: list[Col], postgis: bool) -> list[str]:
    out = ["CREATE EXTENSION hstore", "CREATE EXTENSION ltree", "CREATE EXTENSION citext"]
    if postgis:
        out.append("CREATE EXTENSION postgis")
    out += [
        "CREATE TYPE mood AS ENUM ('sad', 'happy')",
        "ALTER TYPE mood ADD VALUE 'ok' BEFORE 'happy'",
        "CREATE DOMAIN price AS numeric(10,2)",
        "CREATE DOMAIN positive_price AS price CHECK (VALUE > 0)",
        "CREATE DOMAIN int_list AS int[]",
        "CREATE TABLE all_types (id int PRIMARY KEY, "
        + ", ".join(f"{c.name} {c.sql_type}" for c in type_columns) + ")",
        "CREATE TABLE ri_default (id int PRIMARY KEY, name text NOT NULL, qty int, "
        "price numeric(8,2) NOT NULL DEFAULT 0, created date NOT NULL DEFAULT '2020-01-01')",
        "CREATE TABLE ri_full (id int PRIMARY KEY, name text, qty int NOT NULL)",
        "ALTER TABLE ri_full REPLICA IDENTITY FULL",
        "CREATE TABLE ri_index (code text NOT NULL, region int NOT NULL, note text)",
        "CREATE UNIQUE INDEX ri_index_code ON ri_index (code, region)",
        "ALTER TABLE ri_index REPLICA IDENTITY USING INDEX ri_index_code",
        "CREATE TABLE keyless (a int, b text)",
        "ALTER TABLE keyless REPLICA IDENTITY FULL",
        "CREATE TABLE toasted (id int PRIMARY KEY, small int, big text, bigb bytea)",
        "CREATE TABLE done (id int PRIMARY KEY)",
    ]
    return out


def snapshot_rows(type_columns: list[Col]) -> list[str]:
    rows = [
        f"INSERT INTO all_types (id, {', '.join(c.name for c in type_columns)}) "
        f"VALUES ({i}, {', '.join(c.literals[i] for c in type_columns)})"
        for i in range(4)
    ]
    rows += [
        "INSERT INTO all_types (id) VALUES (4)",
        "INSERT INTO ri_default VALUES (1, 'one', 1, 1.5, '2021-02-03'), (2, 'two', NULL, 2, "
        "'2021-02-04')",
        "INSERT INTO ri_full VALUES (1, 'one', 1), (2, NULL, 2)",
        "INSERT INTO ri_index VALUES ('a', 1, 'x'), ('b', 2, NULL)",
        "INSERT INTO keyless VALUES (1, 'k'), (NULL, NULL)",
        f"INSERT INTO toasted VALUES (1, 1, {BIG}, convert_to({BIG}, 'UTF8'))",
    ]
    return rows


def stream_transactions(type_columns: list[Col]) -> list[list[str]]:
    """Each inner list is one transaction."""
    names = ", ".join(c.name for c in type_columns)
    types = [
        [f"INSERT INTO all_types (id, {names}) VALUES "
         f"({100 + i}, {', '.join(c.literals[i] for c in type_columns)})"]
        for i in range(4)
    ]
    return [
        *types,
        ["INSERT INTO all_types (id) VALUES (104)",
         "UPDATE all_types SET i4 = 7 WHERE id = 100",
         "DELETE FROM all_types WHERE id = 101"],
        # replica identity DEFAULT: update, key change, delete (old image: key only)
        ["INSERT INTO ri_default VALUES (3, 'three', 3)",
         "UPDATE ri_default SET qty = 10 WHERE id = 1",
         "UPDATE ri_default SET id = 20 WHERE id = 2",
         "DELETE FROM ri_default WHERE id = 1"],
        # FULL: complete old images, key change, delete
        ["UPDATE ri_full SET name = 'uno', qty = 11 WHERE id = 1",
         "UPDATE ri_full SET id = 30 WHERE id = 2",
         "DELETE FROM ri_full WHERE id = 1"],
        # USING INDEX: old image holds the index columns
        ["UPDATE ri_index SET note = 'y' WHERE code = 'a'",
         "UPDATE ri_index SET region = 5 WHERE code = 'b'",
         "DELETE FROM ri_index WHERE code = 'a'"],
        ["INSERT INTO keyless VALUES (3, 'z')",
         "UPDATE keyless SET b = 'kk' WHERE a = 1",
         "DELETE FROM keyless WHERE a = 3"],
        # unchanged TOAST: only `small` changes, the big values stay on disk
        ["UPDATE toasted SET small = 2 WHERE id = 1"],
        [f"INSERT INTO toasted VALUES (2, 1, {BIG}, NULL)",
         "UPDATE toasted SET small = small + 10",
         "DELETE FROM toasted WHERE id = 2"],
        *MESSAGE_TRANSACTIONS,
        ["TRUNCATE ri_full"],
        ["TRUNCATE ri_index, keyless"],
        ["INSERT INTO done VALUES (1)"],
    ]


# Logical decoding messages (op `m`, topic `<prefix>.message`): transactional ones are emitted
# with their transaction (counted under LOGICAL_DECODING_MESSAGE in its END), non-transactional
# ones as soon as they are read, before the events of a transaction they were written in.
MESSAGE_TRANSACTIONS = [
    ["INSERT INTO ri_full VALUES (40, 'm', 1)",
     "SELECT pg_logical_emit_message(true, 'hw.tx', 'in tx \u00e9')",
     "UPDATE ri_full SET qty = 2 WHERE id = 40"],
    ["SELECT pg_logical_emit_message(true, 'hw.only', '\\x00ff'::bytea)"],
    ["SELECT pg_logical_emit_message(false, 'hw.nontx', '')"],
    ["INSERT INTO ri_full VALUES (41, 'n', 1)",
     "SELECT pg_logical_emit_message(false, 'hw.nontx', 'inside')",
     "DELETE FROM ri_full WHERE id = 41"],
]


# ------------------------------------------------------------------------------------ capture


def common_properties(pg: LocalPostgres, db: str, extra: dict[str, str]) -> dict[str, str]:
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": "127.0.0.1",
        "database.port": str(pg.port),
        "database.user": pg.user,
        "database.password": "unused",
        "database.dbname": db,
        "topic.prefix": PREFIX,
        "plugin.name": "pgoutput",
        "provide.transaction.metadata": "true",
        "skipped.operations": "none",
        "include.unknown.datatypes": "true",
        **extra,
    }


def run_headwater(props: dict[str, str], work: Path) -> Capture:
    all_props = {
        **props,
        "name": "headwater-differential",
        "offset.storage.file.filename": str(work / "offsets.json"),
        "headwater.topics.dir": str(work / "topics"),
        # The oracle's engine writes headers with JsonConverter (its header format): the same
        # header.converter here compares each header's schema as well as its value.
        "header.converter": "org.apache.kafka.connect.json.JsonConverter",
        "headwater.topics.segment.ms": "200",
        "poll.interval.ms": "100",
    }
    path = work / "connector.properties"
    work.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in all_props.items()))
    return Capture(path).start()


def headwater_records(topics: Path) -> dict[str, list[OracleRecord]]:
    out: dict[str, list[OracleRecord]] = {}
    if not topics.exists():
        return out
    for info in reader.list_topics(topics):
        out[info.name] = [
            OracleRecord(
                r.topic,
                None if r.key is None else r.key.decode(),
                None if r.value is None else r.value.decode(),
                tuple((k, _header_text(k, v)) for k, v in r.headers),
            )
            for r in reader.read(topics, info.name)
        ]
    return out


def by_topic(records: list[OracleRecord]) -> dict[str, list[OracleRecord]]:
    out: dict[str, list[OracleRecord]] = {}
    for r in records:
        out.setdefault(r.topic, []).append(r)
    return out


def has_done(records: dict[str, list[OracleRecord]]) -> bool:
    return any(r.value for r in records.get(f"{PREFIX}.public.done", []))


def _header_text(name: str, value: bytes | None) -> str:
    assert value is not None, f"header {name!r} is null; the comparison holds header text"
    return value.decode()


def snapshot_done(records: dict[str, list[OracleRecord]], tables: list[str]) -> bool:
    """Every snapshotted table's last snapshot event is there (source.snapshot 'last'...)."""
    for r in (r for recs in records.values() for r in recs):
        if r.value and '"snapshot":"last"' in r.value:
            return all(f"{PREFIX}.public.{t}" in records for t in tables)
    return False


class Captured:
    """Both connectors' records of one workload, per topic."""

    def __init__(self, debezium: dict[str, list[OracleRecord]],
                 headwater: dict[str, list[OracleRecord]]) -> None:
        self.debezium = debezium
        self.headwater = headwater


def capture_both(
    pg: LocalPostgres, tmp: Path, name: str, type_columns: list[Col], postgis: bool,
    extra: dict[str, str], full_workload: bool,
) -> Captured:
    pg.create_database(name)
    conn = pg.connect(name)
    try:
        with conn.cursor() as cur:
            for stmt in setup_sql(type_columns, postgis):
                cur.execute(stmt)
            for stmt in snapshot_rows(type_columns):
                cur.execute(stmt)
        snap_tables = ["all_types", "ri_default", "ri_full", "ri_index", "keyless", "toasted"]
        props = common_properties(pg, name, extra)
        dbz = DebeziumOracle(
            {**props, "slot.name": f"dbz_{name}", "publication.name": f"dbz_pub_{name}"},
            tmp / "debezium",
        ).start()
        hw: Capture | None = None
        try:
            dbz.wait_for(lambda r: snapshot_done(by_topic(r), snap_tables), 180,
                         "the end of its snapshot")
            hw = run_headwater(
                {**props, "slot.name": f"hw_{name}", "publication.name": f"hw_pub_{name}"},
                tmp / "headwater",
            )
            wait_for(lambda: snapshot_done(headwater_records(tmp / "headwater" / "topics"),
                                           snap_tables),
                     timeout=120, what="Headwater's snapshot")
            time.sleep(1.0)  # both stream now (their slots exist since before their snapshots)
            transactions = stream_transactions(type_columns) if full_workload else [
                *stream_transactions(type_columns)[:4],
                *MESSAGE_TRANSACTIONS,  # message content per binary.handling.mode
                ["INSERT INTO done VALUES (1)"],
            ]
            conn.autocommit = False
            with conn.cursor() as cur:
                for tx in transactions:
                    for stmt in tx:
                        cur.execute(stmt)
                    conn.commit()
            conn.autocommit = True
            dbz.wait_for(lambda r: has_done(by_topic(r)), 120, "the last streamed event")
            wait_for(lambda: has_done(headwater_records(tmp / "headwater" / "topics")),
                     timeout=120, what="Headwater's last streamed event")
            time.sleep(0.5)  # the END of the last transaction follows its last event
        finally:
            dbz.stop()
            if hw is not None:
                hw.stop()
        return Captured(by_topic(dbz.records()), headwater_records(tmp / "headwater" / "topics"))
    finally:
        conn.close()


# ---------------------------------------------------------------------------- normalisation

PROCESSING_TIME = "<processing time>"
SNAPSHOT_POSITION = "<snapshot position>"
RUN_ID = "<run id>"


# The source fields of a snapshot read that two snapshots cannot share (PostgreSQL: the slot's
# consistent point and the snapshot transaction); a connector's differential test names its own.
PG_SNAPSHOT_FIELDS = ("ts_ms", "ts_us", "ts_ns", "lsn", "txId", "sequence", "xmin")


def normalise_value(doc: Any, snapshot_fields: tuple[str, ...] = PG_SNAPSHOT_FIELDS) -> Any:
    payload = doc.get("payload") if isinstance(doc, dict) else None
    if not isinstance(payload, dict) or "op" not in payload:
        return doc
    for f in ("ts_ms", "ts_us", "ts_ns"):
        if isinstance(payload.get(f), int):
            payload[f] = PROCESSING_TIME
    source = payload.get("source")
    if payload["op"] == "r" and isinstance(source, dict):
        for f in snapshot_fields:
            if source.get(f) is not None:
                source[f] = SNAPSHOT_POSITION
    return doc


def parse(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def json_header(key: str, text: str) -> Any:
    """A header written by the JsonConverter (the embedded engine's header format), with the
    run id normalised."""
    parsed = parse(text)
    if key == "__debezium.context.runId" and isinstance(parsed, dict):
        parsed["payload"] = RUN_ID
    return parsed


class Normalise(NamedTuple):
    """What a connector's differential test normalises: the snapshot's source fields, how a
    header's text reads (JSON text, or plain text as the SimpleHeaderConverter writes it)."""

    snapshot_fields: tuple[str, ...] = PG_SNAPSHOT_FIELDS
    header: Callable[[str, str], Any] = json_header


POSTGRES = Normalise()


def record_doc(r: OracleRecord, how: Normalise = POSTGRES) -> dict[str, Any]:
    headers = {k: how.header(k, v) for k, v in r.headers}
    return {"key": parse(r.key), "value": normalise_value(parse(r.value), how.snapshot_fields),
            "headers": headers}


NON_TRANSACTIONAL = "<non-transactional message>"
# Debezium's `source.sequence[0]` is null in the stream until its first commit after the
# snapshot; Headwater's is the snapshot's consistent point (docs/compatibility.md)
FIRST_AFTER_SNAPSHOT = "<first transaction after the snapshot>"
_SEQUENCE = ".value.payload.source.sequence"
_SOURCE_TIMES = tuple(f".value.payload.source.{f}" for f in ("ts_ms", "ts_us", "ts_ns"))


def non_transactional_message(doc: dict[str, Any]) -> bool:
    """A logical decoding message event written outside a transaction (no `source.txId`)."""
    value = doc.get("value")
    payload = value.get("payload") if isinstance(value, dict) else None
    if not isinstance(payload, dict) or payload.get("op") != "m":
        return False
    source = payload.get("source")
    return isinstance(source, dict) and source.get("txId") is None


def stream_event(doc: dict[str, Any]) -> bool:
    """A change event read from the WAL (not a snapshot read)."""
    value = doc.get("value")
    payload = value.get("payload") if isinstance(value, dict) else None
    return isinstance(payload, dict) and payload.get("op") in ("c", "u", "d", "t", "m")


def differences(captured: Captured, how: Normalise = POSTGRES) -> list[Difference]:
    """Every difference, record by record; the source times of a non-transactional message
    get the suffix NON_TRANSACTIONAL (its rule must not hide a transactional one's times)."""
    out: list[Difference] = []
    for topic in sorted(captured.debezium.keys() | captured.headwater.keys()):
        d_recs = captured.debezium.get(topic, [])
        h_recs = captured.headwater.get(topic, [])
        if len(d_recs) != len(h_recs):
            out.append(Difference(topic, "<record count>", len(d_recs), len(h_recs)))
        for i, (d, h) in enumerate(zip(d_recs, h_recs, strict=False)):
            d_doc = record_doc(d, how)
            found: list[Difference] = []
            diff(topic, f"#{i}", d_doc, record_doc(h, how), found)
            if non_transactional_message(d_doc):
                found = [x._replace(path=x.path + NON_TRANSACTIONAL)
                         if x.path.endswith(_SOURCE_TIMES) else x for x in found]
            found = [x._replace(path=x.path + FIRST_AFTER_SNAPSHOT)
                     if x.path.endswith(_SEQUENCE) and isinstance(x.debezium, str)
                     and x.debezium.startswith("[null,") and stream_event(d_doc) else x
                     for x in found]
            out += found
    return out


def unexplained(diffs: list[Difference], rules: list[Rule]) -> list[Difference]:
    return [d for d in diffs if not any(rule.explains(d) for rule in rules)]


def report(diffs: list[Difference], full: Path, limit: int = 60) -> str:
    """Differences grouped by (topic, path without the record number), one example each;
    all of them, one per line, in `full`."""
    full.write_text("".join(f"{d}\n" for d in diffs))
    groups: dict[tuple[str, str], list[Difference]] = {}
    for d in diffs:
        path = d.path.split(".", 1)[1] if "." in d.path else d.path
        groups.setdefault((d.topic, path), []).append(d)
    lines = [f"{len(diffs)} unexplained differences in {len(groups)} places (all in {full}):"]
    for (topic, path), ds in sorted(groups.items())[:limit]:
        lines.append(f"  {topic} {path} (x{len(ds)}): Debezium {ds[0].debezium!r:.300} / "
                     f"Headwater {ds[0].headwater!r:.300}")
    return "\n".join(lines)


# -------------------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def pg() -> Iterator[LocalPostgres]:
    server = LocalPostgres().start()
    try:
        yield server
    finally:
        server.cleanup()


def has_postgis(pg: LocalPostgres) -> bool:
    return "postgis" in pg.psql("SELECT name FROM pg_available_extensions WHERE name='postgis'")


@pytest.fixture(scope="module")
def main_run(pg: LocalPostgres, tmp_path_factory: pytest.TempPathFactory) -> Captured:
    tmp = tmp_path_factory.mktemp("differential")
    postgis = has_postgis(pg)
    columns = [*COLUMNS, *(POSTGIS_COLUMNS if postgis else [])]
    captured = capture_both(pg, tmp, "diff_main", columns, postgis, {}, full_workload=True)
    shutil.rmtree(tmp / "debezium" / "offsets.dat", ignore_errors=True)
    return captured


def test_same_topics_and_record_counts(main_run: Captured) -> None:
    counts_d = {t: len(r) for t, r in main_run.debezium.items()}
    counts_h = {t: len(r) for t, r in main_run.headwater.items()}
    assert counts_d == counts_h
    # the workload reached every kind of event it is meant to compare
    ops = {json.loads(r.value)["payload"].get("op") for rs in main_run.debezium.values()
           for r in rs if r.value}
    assert {"r", "c", "u", "d", "t", "m"} <= ops
    assert f"{PREFIX}.transaction" in counts_d
    assert counts_d[f"{PREFIX}.message"] == 4


def test_every_difference_is_explained(main_run: Captured, tmp_path: Path) -> None:
    rules = load_rules(COMPAT_DOC)
    left = unexplained(differences(main_run), rules)
    assert not left, report(left, tmp_path / "differences.txt")


def test_every_rule_is_still_needed(main_run: Captured) -> None:
    """A rule the run no longer needs is stale documentation (mode rules: see the mode run)."""
    rules = [r for r in load_rules(COMPAT_DOC) if "mode run only" not in r.why]
    diffs = differences(main_run)
    stale = [r for r in rules if not any(r.explains(d) for d in diffs)]
    assert not stale, "rules no difference needs:\n" + "\n".join(map(str, stale))


MODE_PROPS = {
    "decimal.handling.mode": "string",
    "time.precision.mode": "connect",
    "binary.handling.mode": "base64",
}


@pytest.mark.parametrize("decimal_mode", ["string", "double"])
def test_modes_match(pg: LocalPostgres, tmp_path: Path, decimal_mode: str) -> None:
    postgis = has_postgis(pg)
    columns = [*COLUMNS, *(POSTGIS_COLUMNS if postgis else [])]
    specials = Col("nsp", "numeric", ("'NaN'", "'Infinity'", "'-Infinity'", "1e-130"),
                   (None, None, None, None), None)
    if decimal_mode == "string":
        columns.append(specials)
    props = {**MODE_PROPS, "decimal.handling.mode": decimal_mode}
    if decimal_mode == "double":
        props["time.precision.mode"] = "adaptive_time_microseconds"
        # every column's source type, length and scale as schema parameters (pgjdbc's
        # COLUMN_SIZE / DECIMAL_DIGITS in Debezium)
        props["column.propagate.source.type"] = r".*\.all_types\..*"
    captured = capture_both(pg, tmp_path, f"diff_{decimal_mode}", columns, postgis, props,
                            full_workload=False)
    left = unexplained(differences(captured), load_rules(COMPAT_DOC))
    assert not left, report(left, tmp_path / "differences.txt")
