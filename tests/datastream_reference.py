"""Google's Datastream type tables, parsed from /work/shared/reference/datastream-types.md, and
the comparison of one captured column with its row (issue 30, Must show 1).

What a row says and how a column is held to it:

* §B (Datastream's per-source BigQuery page): the BigQuery type of each source type.  Our
  unified type must be the one whose BigQuery column that is (`BIGQUERY_OF`: Datastream writes
  INTEGER/LONG as INT64, NUMBER as STRING, ...).
* §C (Google's own unified-type code): where it names a unified type for the source type, ours
  must be that name, except where §C itself says to trust §B (MySQL DATE, binary types).
* §A (the unified-types page): the Avro type and the JSON form of our unified type.
* §E rows marked ⚠ are unsettled by the reference: reported, never counted as agreement.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

REFERENCE = Path(os.environ.get("HEADWATER_DATASTREAM_TYPES",
                                "/work/shared/reference/datastream-types.md"))

BIGQUERY_OF: dict[str, set[str]] = {
    "INTEGER": {"INT64"}, "LONG": {"INT64"}, "BOOLEAN": {"BOOLEAN", "BOOL"},
    "DECIMAL": {"DECIMAL", "NUMERIC", "BIGNUMERIC"}, "NUMBER": {"STRING"},
    "FLOAT": {"FLOAT64"}, "DOUBLE": {"FLOAT64"}, "BYTES": {"BYTES"}, "STRING": {"STRING"},
    "DATE": {"DATE"}, "DATETIME": {"DATETIME"}, "TIMESTAMP": {"TIMESTAMP"},
    "TIMESTAMP_WITH_TIME_ZONE": {"TIMESTAMP"}, "TIME": {"TIME"},
    "TIME_WITH_TIME_ZONE": {"TIME"}, "TIME_INTERVAL": {"INTERVAL"}, "INTERVAL": {"INTERVAL"},
    "JSON": {"JSON"}, "ARRAY": {"JSON"}, "UNSUPPORTED": {"UNSUPPORTED"},
    "GEOMETRY": {"STRUCT"},
}

# §A's Avro column for each unified type: the Avro type (or record name) our schema must have.
AVRO_OF: dict[str, Any] = {
    "BOOLEAN": "boolean", "BYTES": "bytes", "DATE": ("int", "date"), "DATETIME": "datetime",
    "DECIMAL": ("bytes", "decimal"), "DOUBLE": "double", "FLOAT": "float",
    "GEOMETRY": "geometry", "INTEGER": "int", "LONG": "long", "INTERVAL": "interval",
    "JSON": ("string", "json"), "NUMBER": ("string", "number"), "STRING": "string",
    "TIME": ("long", "time-micros"), "TIME_INTERVAL": ("long", "time-interval-micros"),
    "TIMESTAMP": ("long", "timestamp-micros"),
    # §C (Google's code), not on the page's readable part
    "TIMESTAMP_WITH_TIME_ZONE": "timestampTz", "TIME_WITH_TIME_ZONE": "timeTz",
    "UNSUPPORTED": ("null", "unsupported"), "ARRAY": "array",
}


def _json_form(text: str) -> tuple[type, ...]:
    text = text.strip()
    if text == "boolean":
        return (bool,)
    if text in ("number", "long"):
        return (int, float)
    if text.startswith("string"):
        return (str,)
    if text == "nested JSON":
        return (dict, list, str, int, float, bool)
    raise ValueError(f"unknown JSON form {text!r} in the reference")


def _table_rows(text: str) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows[1:]  # without the header


def _section(text: str, start: str, end: str) -> str:
    a = text.index(start)
    b = text.index(end, a + len(start))
    return text[a:b]


def unified_forms() -> dict[str, tuple[tuple[type, ...], str]]:
    """§A: unified type -> (JSON Python types, Avro text)."""
    text = REFERENCE.read_text()
    out: dict[str, tuple[tuple[type, ...], str]] = {}
    for row in _table_rows(_section(text, "## A.", "## B.")):
        if len(row) < 4 or not row[2]:
            continue
        for name in row[0].split(" / "):
            base = re.sub(r"\(.*\)", "", name).strip()
            out[base] = (_json_form(row[3]), row[2])
    return out


def bigquery_rows(source: str) -> dict[str, str]:
    """§B: source type (as the page names it) -> BigQuery type text."""
    text = REFERENCE.read_text()
    part = _section(text, f"### {source}\n", "\n###")
    out: dict[str, str] = {}
    for names, bq in _table_rows(part):
        for name in re.split(r",\s*(?![^()]*\))", names):
            out[name.strip()] = bq
    return out


def google_code_rows(source: str) -> dict[str, str]:
    """§C: source type -> unified type, from the prose list of Google's mapping code."""
    text = REFERENCE.read_text()
    para = _section(text, f"{source} (", "\n\n")
    body = para.split("):", 1)[1]
    out: dict[str, str] = {}
    for clause in body.split(";"):
        words = clause.replace("*", "").strip().rstrip(".").split()
        if len(words) < 2 or not words[-1].isupper():
            continue
        unified = words[-1]
        for name in " ".join(words[:-1]).split(","):
            for alt in name.split("/"):
                if alt.strip():
                    out[alt.strip()] = unified
    return out


def unsettled_readings() -> list[str]:
    """§E rows marked ⚠: their first cell (e.g. "MySQL binary/blob types")."""
    text = REFERENCE.read_text()
    return [row[0] for row in _table_rows(_section(text, "## E.", "## F."))
            if any("⚠" in c for c in row)]


def bigquery_type(text: str) -> set[str]:
    """A §B cell's BigQuery type(s): "NUMERIC if precision ≤ 38 ..., else BIGNUMERIC" is
    either; a leading STRING condition ("STRING if precision = -1 ...") is handled by rows."""
    words = set(re.findall(r"\b[A-Z][A-Z0-9]+\b", text))
    head = re.match(r"[A-Z0-9]+", text.replace("unified GEOMETRY → BigQuery ", ""))
    kinds = {head.group(0)} if head else set()
    if "BIGNUMERIC" in words:
        kinds |= {"NUMERIC", "BIGNUMERIC"}
    return kinds


def compare(unified_full: str, avro: Any, json_value: Any, discover: str | None,
            bq_text: str, code: str | None, forms: dict[str, tuple[tuple[type, ...], str]]
            ) -> list[str]:
    """The differences of one column from its reference row (empty: none)."""
    unified = unified_full.split("(", maxsplit=1)[0]
    out: list[str] = []
    if not BIGQUERY_OF.get(unified, set()) & bigquery_type(bq_text):
        out.append(f"unified {unified} is BigQuery {sorted(BIGQUERY_OF.get(unified, ()))}, "
                   f"the page says {bq_text!r}")
    # §C defers to §B where the two disagree (the code's type is another BigQuery column)
    if code is not None and code != unified and BIGQUERY_OF.get(code, set()) & bigquery_type(
            bq_text):
        out.append(f"unified {unified}, Google's code says {code}")
    if discover is not None and discover != unified:
        out.append(f"discover says {discover}, events say {unified}")
    branch = avro if not isinstance(avro, list) else next(b for b in avro if b != "null")
    want = AVRO_OF[unified]
    if isinstance(want, tuple):
        got: Any = (branch.get("type"), branch.get("logicalType")) if isinstance(
            branch, dict) else (branch, None)
    elif isinstance(branch, dict):
        got = (branch["name"].rpartition(".")[2] if branch.get("type") == "record"
               else branch.get("type"))
    else:
        got = branch.rpartition(".")[2]
    if got != want:
        out.append(f"Avro {branch!r}, expected {want!r} for {unified}")
    if unified in forms and json_value is not None:
        types = forms[unified][0]
        if not isinstance(json_value, types) or (
                isinstance(json_value, bool) and bool not in types):  # True is an int too
            out.append(f"JSON {json_value!r}, expected {forms[unified][0]} for {unified}")
    if unified == "UNSUPPORTED" and json_value is not None:
        out.append(f"JSON {json_value!r} for an UNSUPPORTED column")
    return out


# A placeholder in the reference's examples ("…"): any string matches it.
ANY = "\u2026"


def mongodb_examples() -> tuple[dict[str, Any], dict[str, Any]]:
    """§B, MongoDB: (strict, canonical) examples by BSON type name.

    Strict: "Examples: DOUBLE `3.14`; STRING as is; ARRAY as JSON array; BOOLEAN; ...": a
    backquoted example is parsed as JSON; a type without one is None (written as JSON writes
    it: string, array, true/false, null).  Canonical: the page lists four examples without
    type names; each is named by its Extended JSON tag ($numberInt INT32, $numberDouble
    DOUBLE, $date DATE, $binary BINARY)."""
    text = REFERENCE.read_text()
    part = _section(text, "### MongoDB", "\n## C.")
    strict_text = part.split("Examples:", 1)[1].split("\nSince", 1)[0]
    strict: dict[str, Any] = {}
    for part_ in " ".join(strict_text.split()).rstrip(".").split(";"):
        clause = part_.strip()
        name = re.match(r"[A-Z0-9/]+", clause)
        if name is None:
            raise ValueError(f"MongoDB example without a type name: {clause!r}")
        example = re.search(r"`([^`]*)`", clause)
        for alias in name.group(0).split("/"):
            strict[alias] = _example(example.group(1)) if example else None
    canonical_text = part.split("canonical labels every type", 1)[1].split(")\n", 1)[0]
    tags = {"$numberInt": "INT32", "$numberDouble": "DOUBLE", "$date": "DATE",
            "$binary": "BINARY"}
    canonical: dict[str, Any] = {}
    for example in re.findall(r"`([^`]*)`", canonical_text):
        value = _example(example)
        canonical[tags[next(iter(value))]] = value
    return strict, canonical


def _example(text: str) -> Any:
    import json

    return json.loads(text)


def matches_example(value: Any, example: Any) -> bool:
    """A rendered value against a reference example: equal, the placeholder matching any
    string; objects compared key by key (their order is not significant)."""
    if example == ANY:
        return isinstance(value, str)
    if isinstance(example, dict):
        return isinstance(value, dict) and set(value) == set(example) and all(
            matches_example(value[k], example[k]) for k in example)
    if isinstance(example, list):
        return isinstance(value, list) and len(value) == len(example) and all(
            matches_example(v, e) for v, e in zip(value, example, strict=True))
    return type(value) is type(example) and bool(value == example)
