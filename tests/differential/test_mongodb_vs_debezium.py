"""Headwater's MongoDB events against real Debezium 3.x's MongoDB connector, record by record.

One local replica set.  For each of the four capture modes, a fresh database `inv` is seeded
(documents of every BSON type, `_id`s of every type; collections with pre/post images enabled)
and captured by both connectors with `provide.transaction.metadata=true`: Headwater (in-process)
first, until its snapshot is complete; then Debezium (headwater.testing.debezium_oracle's
`capture_mongodb`) snapshots the same documents and, once it streams, the workload runs:
inserts of every BSON type and `_id` type, deletes (tombstones), nested `$set`, `$unset`,
array updates, truncated arrays (pipeline `$slice`: MongoDB 6 reports `truncatedArrays` only
for those), `$replaceWith`, replacements, `$rename`, and a multi-document transaction over two
collections.  Both read the same oplog range (Headwater streams from its snapshot's resume
token, before the workload), so every topic must hold the same records: keys, values (schema
and payload), headers, tombstones, and the transaction topic.

Normalised here, because they must differ between two captures: the envelope's processing time
`ts_ms`, the snapshot reads' `source.ts_ms/ts_us/ts_ns` (the read time), the
`__debezium.context.runId` header.  A document string (`before`, `after`, `updatedFields`, the
key's `id`) that differs is classified by what differs, when that is all that differs: the
form of a double JDK 17 prints differently (`<JDK 17 double>`), characters Java 17's Unicode 13
tables escape and Headwater's (Java 25, Unicode 16) do not (`<JDK 17 Unicode>`), and in the
`*_update_full` modes an update's `after` that is another version of the document
(`<update lookup>`: the lookup reads the document when the server builds the batch).  The
snapshot reads' `source.ord` is tagged `<snapshot start event>` when Headwater's is -1 (Debezium
takes the snapshot's position from an event if one arrives while it probes the stream).  The
classification is a suffix of the difference's path; everything else keeps its plain path.

Every difference must be explained by a row of docs/compatibility.md's table "MongoDB
differences the tests accept", and every row must be needed by this run (rows marked
"race-dependent" excepted: whether a lookup races depends on timing).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from headwater.connectors.mongodb._java_chars import LITERAL
from headwater.testing.capture_thread import Capture
from headwater.testing.debezium_oracle import (
    MONGO_MARKER_DB,
    OracleRecord,
    available,
    capture_mongodb,
)
from headwater.testing.localmongo import LocalMongo, LocalMongoError, find_mongod
from headwater.testing.timeouts import scaled

from .compat import Difference, Rule, diff, load_rules
from .test_postgres_vs_debezium import (
    PROCESSING_TIME,
    RUN_ID,
    SNAPSHOT_POSITION,
    by_topic,
    headwater_records,
    parse,
    report,
    unexplained,
)

pytestmark: list[pytest.MarkDecorator] = [pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
COMPAT_DOC = REPO / "docs" / "compatibility.md"
HEADING = "## MongoDB differences the tests accept"
DB = "inv"

_skip = available()
if _skip is None:
    try:
        find_mongod()
    except LocalMongoError as exc:
        _skip = str(exc)
if _skip is not None:
    pytestmark = [pytest.mark.integration, pytest.mark.skip(reason=_skip)]

MODES = {  # topic prefix -> capture.mode
    "cs": "change_streams",
    "csuf": "change_streams_update_full",
    "csufpi": "change_streams_update_full_with_pre_image",
    "cspi": "change_streams_with_pre_image",
}


def _fixtures_script() -> ModuleType:
    """scripts/capture_mongodb_fixtures.py: its values of every type and its workloads (they
    write to database `inv`)."""
    path = REPO / "scripts" / "capture_mongodb_fixtures.py"
    spec = importlib.util.spec_from_file_location("capture_mongodb_fixtures", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.DB == DB
    return module


FX = _fixtures_script()

# ------------------------------------------------------------------------------- the workload


def seed(client: Any) -> None:
    db = client[DB]
    for name in ("modes", "upd", "trunc", "tx", "tx2", "types", "ids"):
        db.create_collection(name, changeStreamPreAndPostImages={"enabled": True})
    db["snap_ids"].insert_many([{"_id": v, "n": n} for n, v in enumerate(FX.id_values())])
    db["snap_types"].insert_many(FX.type_documents())
    db["modes"].insert_one({"_id": "seeded", "v": 1})


def w_truncation(client: Any) -> None:
    c = client[DB]["trunc"]
    c.insert_one({"_id": 1, "arr": list(range(10)), "o": {"b": [1, 2, 3, 4]}, "s": "x"})
    c.update_one({"_id": 1}, [{"$set": {"arr": {"$slice": ["$arr", 3]}}}])
    c.update_one({"_id": 1}, [{"$set": {"o.b": {"$slice": ["$o.b", 2]}, "s": "y"}}])
    c.update_one({"_id": 1}, [{"$set": {"arr": {"$concatArrays": [{"$slice": ["$arr", 1]},
                                                                  [{"n": 1}]]}}}])
    c.update_one({"_id": 1}, {"$set": {"arr.1.n": 2, "o.c.d": [1]}, "$unset": {"o.b": ""}})
    c.update_one({"_id": 1}, {"$pull": {"arr": {"n": 2}}})


def workload(client: Any) -> None:
    FX.w_types(client)
    FX.w_modes(client)
    FX.w_updates(client)
    w_truncation(client)
    FX.w_transaction(client)
    client[DB]["types"].update_one({"_id": "int32"}, {"$set": {"v": 43}})  # ends the tx
    client[DB]["zz_done"].insert_one({"_id": "done"})


# ------------------------------------------------------------------------------------ capture


class Captured:
    def __init__(self, debezium: dict[str, list[OracleRecord]],
                 headwater: dict[str, list[OracleRecord]]) -> None:
        self.debezium = debezium
        self.headwater = headwater


def run_headwater(props: dict[str, str], work: Path) -> Capture:
    work.mkdir(parents=True, exist_ok=True)
    all_props = {
        **props,
        "connector.class": "io.debezium.connector.mongodb.MongoDbConnector",
        "name": "headwater-oracle",  # the oracle's connector name (context headers)
        "offset.storage.file.filename": str(work / "offsets.json"),
        "headwater.topics.dir": str(work / "topics"),
        # The oracle's engine writes headers with JsonConverter (its header format): the same
        # header.converter here compares each header's schema as well as its value.
        "header.converter": "org.apache.kafka.connect.json.JsonConverter",
        "headwater.topics.segment.ms": "200",
        "poll.interval.ms": "50",
        "cursor.max.await.time.ms": "100",
    }
    path = work / "connector.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in all_props.items()))
    return Capture(path).start()


def _wait(predicate: Callable[[], bool], what: str, capture: Capture,
          timeout: float = 60) -> None:
    deadline = time.monotonic() + scaled(timeout)
    while not predicate():
        if capture.error is not None:
            raise AssertionError(f"Headwater failed waiting for {what}: {capture.error!r}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _has(topics: Path, topic: str, needle: str) -> bool:
    return any(r.value and needle in r.value
               for r in headwater_records(topics).get(topic, []))


def capture_both(server: LocalMongo, tmp: Path, prefix: str, mode: str) -> Captured:
    client = server.client()
    try:
        client.drop_database(DB)
        client.drop_database(MONGO_MARKER_DB)  # capture_mongodb's markers: one run each
        seed(client)
        props = {"topic.prefix": prefix, "capture.mode": mode, "database.include.list": DB,
                 "provide.transaction.metadata": "true"}
        topics = tmp / "headwater" / "topics"
        hw = run_headwater({**props, "mongodb.connection.string": server.connection_string},
                           tmp / "headwater")
        try:
            _wait(lambda: _has(topics, f"{prefix}.{DB}.snap_types", '"snapshot":"last"'),
                  "Headwater's snapshot", hw)
            records = capture_mongodb(server.connection_string, props,
                                      lambda: workload(client), tmp / "debezium")
            _wait(lambda: _has(topics, f"{prefix}.{DB}.zz_done", '"op":"c"'),
                  "Headwater's last event", hw)
            time.sleep(0.5)
        finally:
            hw.stop()
        return Captured(by_topic(records), headwater_records(topics))
    finally:
        client.drop_database(DB)
        client.close()


# ---------------------------------------------------------------------------- normalisation

_STRINGS = re.compile(r"#\d+\.(?:value\.payload\.(?:before|after|updateDescription\."
                      r"updatedFields)|key\.payload\.id)")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:E[+-]?\d+)?")
_ESCAPE = re.compile(r"\\u([0-9a-f]{4})(?:\\u(d[c-f][0-9a-f]{2}))?")
_JDK17_ONLY_ESCAPED = frozenset(
    c for a, b in LITERAL[25] for c in range(a, b + 1)
) - frozenset(c for a, b in LITERAL[17] for c in range(a, b + 1))


def _unescaped(text: str, chars: set[int]) -> str:
    """`text` with its \\u escapes replaced by the characters (collected in `chars`)."""
    def one(m: re.Match[str]) -> str:
        n = int(m[1], 16)
        if m[2] and 0xD800 <= n < 0xDC00:
            n = 0x10000 + ((n - 0xD800) << 10) + (int(m[2], 16) - 0xDC00)
            chars.add(n)
            return chr(n)
        chars.add(n)
        return chr(n) + (f"\\u{m[2]}" if m[2] else "")
    return _ESCAPE.sub(one, text)


def _same_doubles(a: str, b: str) -> bool:
    """Equal but for number tokens that denote the same double (JDK 17's Double.toString
    prints some with needless digits: JDK-4511638)."""
    if _NUMBER.sub("#", a) != _NUMBER.sub("#", b):
        return False
    return all(float(x) == float(y) and (x == y or "." in x + y or "E" in x + y)
               for x, y in zip(_NUMBER.findall(a), _NUMBER.findall(b), strict=True))


def classify(d: str, h: str) -> str | None:
    """What alone makes two document strings differ, or None."""
    chars: set[int] = set()
    ud, uh = _unescaped(d, chars), _unescaped(h, chars)
    jdk17_chars = bool(chars) and chars - {ord(c) for c in "\"\\"} <= _JDK17_ONLY_ESCAPED | set(
        range(0x20))
    if ud == uh and jdk17_chars and ud != d:
        return "<JDK 17 Unicode>"
    if _same_doubles(d, h):
        return "<JDK 17 double>"
    if ud == uh or (jdk17_chars and _same_doubles(ud, uh)):
        return "<JDK 17 Unicode, double>" if ud != uh else "<JDK 17 Unicode>"
    return None


def normalise(r: OracleRecord) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    for k, v in r.headers:
        parsed = parse(v)
        if k == "__debezium.context.runId" and isinstance(parsed, dict):
            parsed["payload"] = RUN_ID
        headers[k] = parsed
    value = parse(r.value)
    payload = value.get("payload") if isinstance(value, dict) else None
    if isinstance(payload, dict) and "op" in payload:
        if isinstance(payload.get("ts_ms"), int):
            payload["ts_ms"] = PROCESSING_TIME
        source = payload.get("source")
        if payload["op"] == "r" and isinstance(source, dict):
            for f in ("ts_ms", "ts_us", "ts_ns"):
                source[f] = SNAPSHOT_POSITION
    return {"key": parse(r.key), "value": value, "headers": headers}


def _versions(records: list[OracleRecord]) -> dict[str, set[str | None]]:
    """Key id -> every version of the document a topic shows (the lookup may read any)."""
    out: dict[str, set[str | None]] = {}
    for r in records:
        if r.key is None or r.value is None:
            continue
        payload = json.loads(r.value)["payload"]
        seen = out.setdefault(json.loads(r.key)["payload"]["id"], {None})
        seen.update(payload[f] for f in ("before", "after") if payload.get(f) is not None)
    return out


def differences(captured: Captured) -> list[Difference]:
    out: list[Difference] = []
    for topic in sorted(captured.debezium.keys() | captured.headwater.keys()):
        d_recs = captured.debezium.get(topic, [])
        h_recs = captured.headwater.get(topic, [])
        if len(d_recs) != len(h_recs):
            out.append(Difference(topic, "<record count>", len(d_recs), len(h_recs)))
        lookup = topic.split(".")[0] in ("csuf", "csufpi")
        versions = _versions(d_recs + h_recs) if lookup else {}
        found: list[Difference] = []
        for i, (d, h) in enumerate(zip(d_recs, h_recs, strict=False)):
            docs = normalise(d), normalise(h)
            diff(topic, f"#{i}", docs[0], docs[1], found)
            payloads = [doc["value"]["payload"] if doc["value"] else {} for doc in docs]
            for j, x in enumerate(found):
                if x.path == f"#{i}.value.payload.source.ord" and payloads[0].get("op") == "r" \
                        and x.headwater == -1:
                    found[j] = x._replace(path=x.path + "<snapshot start event>")
                    continue
                if not (x.path.startswith(f"#{i}.") and _STRINGS.fullmatch(x.path)):
                    continue
                kind = (classify(x.debezium, x.headwater) if isinstance(x.debezium, str)
                        and isinstance(x.headwater, str) else None)
                key = docs[0]["key"]["payload"]["id"] if docs[0]["key"] else None
                if kind is None and lookup and x.path.endswith(".after") and all(
                        p.get("op") == "u" for p in payloads) and {
                        x.debezium, x.headwater} <= (
                        versions.get(key, set()) if key is not None else set()):
                    kind = "<update lookup>"
                if kind is not None:
                    found[j] = x._replace(path=x.path + kind)
        out += found
    return out


# -------------------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Captured]]:
    server = LocalMongo().start()
    try:
        out = {}
        for prefix, mode in MODES.items():
            tmp = tmp_path_factory.mktemp(f"mongo-{prefix}")
            out[prefix] = capture_both(server, tmp, prefix, mode)
            shutil.rmtree(tmp / "headwater", ignore_errors=True)
        yield out
    finally:
        server.cleanup()


def _all(runs: dict[str, Captured]) -> Captured:
    merged = Captured({}, {})
    for captured in runs.values():  # topic prefixes differ: topics are disjoint
        merged.debezium.update(captured.debezium)
        merged.headwater.update(captured.headwater)
    return merged


def test_same_topics_and_record_counts(runs: dict[str, Captured]) -> None:
    merged = _all(runs)
    counts_d = {t: len(r) for t, r in merged.debezium.items()}
    counts_h = {t: len(r) for t, r in merged.headwater.items()}
    assert counts_d == counts_h
    for prefix in MODES:  # the workload reached every kind of event it is meant to compare
        values = [json.loads(r.value)["payload"] for t, rs in runs[prefix].debezium.items()
                  for r in rs if r.value and not t.endswith(".transaction")]
        assert {"r", "c", "u", "d"} <= {p["op"] for p in values}
        assert any(p["updateDescription"] and p["updateDescription"]["truncatedArrays"]
                   for p in values if p["op"] == "u")
        assert f"{prefix}.transaction" in counts_d
        assert any(r.value is None for rs in runs[prefix].debezium.values() for r in rs)


def test_every_difference_is_explained(runs: dict[str, Captured], tmp_path: Path) -> None:
    rules = load_rules(COMPAT_DOC, HEADING)
    left = unexplained(differences(_all(runs)), rules)
    assert not left, report(left, tmp_path / "differences.txt")


def test_every_rule_is_still_needed(runs: dict[str, Captured]) -> None:
    rules: list[Rule] = [r for r in load_rules(COMPAT_DOC, HEADING)
                         if "race-dependent" not in r.why]
    diffs = differences(_all(runs))
    stale = [r for r in rules if not any(r.explains(d) for d in diffs)]
    assert not stale, "rules no difference needs:\n" + "\n".join(map(str, stale))
