"""The documentation's claims about configuration properties hold in both directions.

Why: a property named in the docs that no definition knows is refused at start (or was renamed
and the docs kept the old name), and a defined property no page names is a setting nobody can
find.  Both drifted silently before (`headwater.files.dir` in docs/streams.md, 30-odd defined
properties on no page), so this test reads every page as a user would and asks the definitions:

* a claim is a dotted name in backticks (`name` or `name=value`), a key of a ``properties``
  code block, or the first cell of a table whose header's first cell is "property";
* it must be known to the definitions: a connector's `ConfigDef` (name, alias, pattern, or a
  Debezium name it recognises and refuses), the namespaces the connector definition hands to
  other Headwater modules (pipeline, ops, topic-log retention: asked through their own
  validation), the plugin properties transforms and converters read, or a pass-through prefix
  the definitions declare (Kafka clients, `spark.`, transforms);
* every property those definitions declare must be named on some page.

Backticked names outside a Headwater namespace (event fields, schema parameters, modules) are
not claims; the few inside one that are not properties are listed in `NOT_PROPERTIES`, each with
its reason.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from pathlib import Path

import pytest

from headwater.capture import OPS_PROPERTIES
from headwater.config.definition import LENIENT, ConfigDef
from headwater.config.loader import ConfigError, unwrap_debezium_server
from headwater.config.pipeline_names import PIPELINE_PROPERTIES
from headwater.connectors.registry import BUILTINS, ConnectorRegistration
from headwater.relational.config import HEADWATER_PASSTHROUGH_PREFIXES
from headwater.server.connectors import definition
from headwater.topics import retention_config

ROOT = Path(__file__).resolve().parents[2]
PAGES = (*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md")
SRC = ROOT / "src" / "headwater"

# Names in a Headwater namespace that the docs mention and that are not Headwater properties.
NOT_PROPERTIES: dict[str, str] = {
    "snapshot.mdoe": "compatibility.md's example of a misspelling the validation refuses",
    "schema.evolution": "a property of Debezium's JDBC sink connector (compatibility.md)",
    "event.block": "the schema name of the envelope's transaction block",
    "event.collection": "the schema name of the transaction block's per-table counts",
    "schema.table": "a placeholder for a table's name",
    "headwater.batch": "a key of an Iceberg table's snapshot summary (pipeline.md)",
    "schema.table.column": "a placeholder for a column's name",
    "database.schema.table": "a placeholder for a SQL Server table's name",
    "cdc.change_tables": "SQL Server's catalog table of capture instances (streams.md)",
    "connect.name": "a Connect schema's name in Avro (converters.md)",
    "connect.version": "a Connect schema's version in Avro (converters.md)",
    "connect.doc": "a Connect schema's doc in Avro (converters.md)",
    "connect.default": "a Connect schema's default in Avro (converters.md)",
    "connect.parameters": "a Connect schema's parameters in Avro (converters.md)",
    "connect.type": "a Connect schema's type in Avro (converters.md)",
    "connect.decimal.precision": "a Decimal schema's parameter",
    "min.insync.replicas": "a Kafka topic config (set through topic.creation.*), kafka.md",
    "errors.tolerance": "Kafka Connect's worker setting, named as not implemented",
    "headwater.notifications": "a logger's name (operations.md)",
    "cdc.lsn_time_mapping": "a SQL Server system table",
    "header.name.value": "an expression of the Filter/ContentBasedRouter language",
    "value.after.id": "an expression of the Filter/ContentBasedRouter language",
}

_FENCE = re.compile(r"^\s*```\s*(\w*)")
# A property name: dotted, each part starting lowercase; `<placeholder>`, `[optional]` parts and
# a trailing `*` are allowed (they are expanded or read as prefixes below).
_OPTIONAL = r"(?:\[[^\]\s]+\])?"
_PART = r"(?:[A-Za-z0-9_*-]+|<[^>\s]+>)"
_NAME = re.compile(rf"[a-z][A-Za-z0-9_-]*{_OPTIONAL}(?:\.{_PART}{_OPTIONAL})*")
_SERVER_SOURCE = "debezium.source."
_BRACKETS = re.compile(r"\[([^\]]*)\]")
_FILE_SUFFIXES = (".py", ".md", ".json", ".jsonl", ".properties", ".yaml", ".yml", ".sql",
                  ".txt", ".gz", ".avro", ".sh", ".html", ".js", ".css")
_PLUGIN_READS = frozenset({"get_str", "get_raw", "required", "get_list", "get_bool", "get_int",
                           "choice", "has", "ignore", "refuse"})


@dataclass(frozen=True, slots=True)
class Claim:
    page: str
    line: int
    name: str
    strict: bool  # a properties block key or a property table's first cell: always a claim


def _backticked(line: str) -> Iterator[str]:
    for span in re.findall(r"`([^`]+)`", line):
        yield span.split("=", 1)[0].strip()


def _first_cell_names(line: str) -> Iterator[str]:
    cell = line.strip().strip("|").split("|", 1)[0]
    for token in re.split(r"[\s,/`()]+", cell):
        if token:
            yield token


def page_mentions(path: Path) -> Iterator[Claim]:
    """Every name the page writes where a property could be meant."""
    page = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
    block: str | None = None
    property_table = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = _FENCE.match(line)
        if fence:
            block = None if block is not None else fence.group(1)
            continue
        if block is not None:
            text = line.strip()
            if block == "properties" and text and not text.startswith(("#", "!")):
                key = re.split(r"\s*[=:]\s*|\s+", text, maxsplit=1)[0]
                yield Claim(page, number, key, True)
            continue
        if line.lstrip().startswith("|"):
            cells = [c.strip().lower() for c in line.strip().strip("|").split("|")]
            if cells and cells[0] == "property":
                property_table = True
                continue
            if property_table and not set(cells[0]) <= set("-: "):
                for token in _first_cell_names(line):
                    yield Claim(page, number, token, True)
        else:
            property_table = False
        for key in _backticked(line):
            yield Claim(page, number, key, False)


@cache
def mentions() -> tuple[Claim, ...]:
    return tuple(claim for page in PAGES for claim in page_mentions(page))


@cache
def connector_definitions() -> tuple[ConfigDef, ...]:
    found = []
    for ref in BUILTINS:
        module, _, attr = ref.partition(":")
        registration: ConnectorRegistration = getattr(import_module(module), attr)
        defn = definition(registration)
        assert defn is not None, f"{registration.name} declares no ConfigDef"
        found.append(defn)
    return tuple(found)


@cache
def plugin_properties() -> tuple[frozenset[str], tuple[re.Pattern[str], ...]]:
    """The property names transforms and converters read through `PluginProps` (or hand to
    a base class that does): exact names, and the forms an f-string builds (`{side}.x`)."""
    names: set[str] = set()
    forms: list[re.Pattern[str]] = []
    for folder in ("transforms", "converters"):
        for path in (SRC / folder).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in {*_PLUGIN_READS, "__init__"}):
                    continue
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        if "." in arg.value:
                            names.add(arg.value)
                    elif isinstance(arg, ast.JoinedStr):
                        forms.append(re.compile("".join(
                            re.escape(part.value) if isinstance(part, ast.Constant)
                            and isinstance(part.value, str) else "[a-z]+"
                            for part in arg.values)))
    return frozenset(names), tuple(forms)


def plugin_known(name: str) -> bool:
    names, forms = plugin_properties()
    return name in names or any(form.fullmatch(name) for form in forms)


def _delegated_prefixes() -> tuple[str, ...]:
    # Handed by the connector definition to Headwater modules that validate them; `spark.` is
    # Spark's own settings, passed through as is.
    return tuple(p for p in HEADWATER_PASSTHROUGH_PREFIXES if p != "spark.")


def _delegated_known(name: str) -> bool:
    if name.startswith("headwater.pipeline."):
        return name in PIPELINE_PROPERTIES
    if name.startswith("headwater.ops."):
        return name in OPS_PROPERTIES
    if name.startswith(retention_config.PREFIX) or name.startswith(
            retention_config.TOP_LEVEL_KEYS):
        return retention_known(name)
    return False  # a namespace nothing reads (headwater.sink.)


def retention_known(name: str) -> bool:
    """Asked of the topic log's retention validation itself (a group named by the key is
    listed, so that only the key's own name can be unknown)."""
    if not name.startswith((retention_config.PREFIX, *retention_config.TOP_LEVEL_KEYS)):
        return False  # (the validation reads only its own keys)
    props = {name: "1"}
    group = name.removeprefix(retention_config.PREFIX).split(".", 1)[0]
    if name.startswith(retention_config.PREFIX) and "." in name.removeprefix(
            retention_config.PREFIX):
        props[retention_config.PREFIX + "groups"] = group
    try:
        retention_config.retention_rules(props)
    except ConfigError as exc:
        return not any(p.startswith(f"{name}: unknown") for p in exc.problems)
    return True


def _variants(name: str) -> list[str]:
    """`a[.b].c` is `a.c` and `a.b.c`; `<placeholder>` parts become a sample value."""
    expanded = [name]
    while any(_BRACKETS.search(n) for n in expanded):
        expanded = [v for n in expanded for v in (
            _BRACKETS.sub("", n, count=1), _BRACKETS.sub(r"\1", n, count=1))]
    return [re.sub(r"<[^>]+>", "g", n) for n in expanded]


def known(name: str) -> bool:
    """True when a definition accepts `name` as a property (or a prefix of properties)."""
    if name.endswith("*"):
        prefix = name.rstrip("*")
        return any(n.startswith(prefix) for n in defined()) or any(
            prefix.startswith(p) for d in connector_definitions() for p in d.passthrough_prefixes
            if p not in _delegated_prefixes())
    return all(_known_one(v) for v in _variants(name))


def _passes_through(defn: ConfigDef, name: str) -> bool:
    """`ConfigDef`'s rule: under a prefix, or the prefix without its dot (`transforms`)."""
    return any(name.startswith(p) or name == p.rstrip(".") for p in defn.passthrough_prefixes)


@cache
def _known_one(name: str) -> bool:
    if name.startswith(_SERVER_SOURCE):  # Debezium Server's form of a connector property
        name = next(iter(unwrap_debezium_server({name: "x"})))
    if name == LENIENT or plugin_known(name):
        return True
    if name.startswith(_delegated_prefixes()) or name.startswith(
            retention_config.TOP_LEVEL_KEYS):
        return _delegated_known(name)
    for defn in connector_definitions():
        if (defn.canonical_name(name) is not None or name in defn.ignored
                or _passes_through(defn, name)
                or any(re.fullmatch(p.pattern, name) for p in defn.pattern_properties)
                or any(p.fullmatch(name) for p, _ in defn.ignored_patterns)):
            return True
    # Kafka's topic config names, which the topic log takes under `headwater.topics.`.
    return retention_known(retention_config.TOPICS + name)


@cache
def defined() -> frozenset[str]:
    """Every property a definition declares (aliases and refused names aside)."""
    names = {LENIENT, *PIPELINE_PROPERTIES, *OPS_PROPERTIES, *retention_config.DEFAULT_KEYS}
    for defn in connector_definitions():
        names.update(defn.names)
    return frozenset(names)


@cache
def namespaces() -> frozenset[str]:
    """First parts of Headwater's property names: a backticked name in one is a claim."""
    heads = {n.split(".", 1)[0] for n in defined()}
    for defn in connector_definitions():
        heads.update(a.split(".", 1)[0] for p in defn for a in p.aliases)
        heads.update(p.name.split(".", 1)[0] for p in defn.pattern_properties)
    return frozenset(heads)


def _is_code_or_file(name: str) -> bool:
    if name.endswith(_FILE_SUFFIXES):
        return True
    dotted = name if name.startswith("headwater.") else "headwater." + name
    parts = dotted.split(".")
    for cut in range(len(parts), 1, -1):
        try:
            found: object = import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(found, attr):
                return False
            found = getattr(found, attr)
        return cut < len(parts) or name.startswith("headwater.")
    return False


def unknown_claims(found: Iterator[Claim] | tuple[Claim, ...]) -> list[str]:
    """`page:line: name` of each claim no definition knows."""
    out = set()
    for claim in found:
        name = claim.name
        if claim.strict and name.startswith("."):
            out.add(f"{claim.page}:{claim.line}: {name} (write the whole name)")
            continue
        if not _NAME.fullmatch(name) or "." not in name or known(name) or name in NOT_PROPERTIES:
            continue
        if not claim.strict and (name.split(".", 1)[0] not in namespaces()
                                 or _is_code_or_file(name)):
            continue
        out.add(f"{claim.page}:{claim.line}: {name}")
    return sorted(out)


def test_every_documented_property_is_defined() -> None:
    unknown = unknown_claims(mentions())
    assert not unknown, "properties the docs name but no definition knows:\n" + "\n".join(unknown)


def test_every_defined_property_is_documented() -> None:
    written = {v for c in mentions() for v in _variants(c.name)}
    missing = sorted(n for n in defined() if n not in written)
    assert not missing, "defined properties no page names:\n" + "\n".join(missing)


def test_every_pattern_property_is_documented() -> None:
    written = {v for c in mentions() for v in _variants(c.name)}
    missing = sorted({p.name for d in connector_definitions() for p in d.pattern_properties
                      if not any(re.fullmatch(p.pattern, w) for w in written)})
    assert not missing, "property families no page names:\n" + "\n".join(missing)


def test_not_properties_are_unknown_and_still_mentioned() -> None:
    # An entry a definition knows would hide a claim; one no page mentions any more is stale.
    wrongly = sorted(n for n in NOT_PROPERTIES if known(n))
    assert not wrongly, f"known properties listed as not properties: {wrongly}"
    named = {c.name for c in mentions()}
    stale = sorted(n for n in NOT_PROPERTIES if n not in named)
    assert not stale, f"NOT_PROPERTIES entries no page mentions: {stale}"


@pytest.mark.parametrize(("text", "expected"), [
    ("Set `snapshot.mode=never` and `headwater.topics.dir`.", ["snapshot.mode",
                                                            "headwater.topics.dir"]),
    ("```properties\ntopic.prefix=x\n# c\nslot.name: s\n```\n", ["topic.prefix", "slot.name"]),
    ("| property | default |\n|---|---|\n| a.b / c.d | 1 |\n\nafter", ["a.b", "c.d"]),
    ("```sh\nx.y=1\n```\n| name | v |\n|---|---|\n| a.b | 1 |\n", []),
])
def test_claims_are_read_from_spans_blocks_and_property_tables(
        tmp_path: Path, text: str, expected: list[str]) -> None:
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    assert [c.name for c in page_mentions(page)] == expected


def test_a_page_naming_an_unknown_property_fails(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Set `headwater.pipeline.mdoe=scd2` (not `headwater.topics.record`), or\n"
                    "```properties\nsnapshot.mdoe=initial\nnot.a.headwater.thing=1\n```\n"
                    "`database.hostname`, `source.ts_ms`, `offsets.json`\n", encoding="utf-8")
    assert unknown_claims(page_mentions(page)) == [
        f"{page}:1: headwater.pipeline.mdoe", f"{page}:4: not.a.headwater.thing"]


def test_a_misspelt_or_invented_property_is_caught() -> None:
    # What the first test would report for each, were a page to name it.
    for name in ("headwater.pipline.mode", "snapshot.mdoe", "headwater.files.dir",
                 "headwater.pipeline.mdoe", "headwater.ops.log.fromat",
                 "headwater.topics.retention.big.retention.msx", "headwater.sink.path",
                 "debezium.source.snapshot.mdoe"):
        assert not known(name), name
    for name in ("snapshot.mode", "database.history.kafka.topic", "column.truncate.to.N.chars",
                 "column.mask.hash[.v2].ALG.with.salt.SALT", "producer.acks", "spark.master",
                 "headwater.pipeline.mode", "headwater.topics.retention.<group>.include",
                 "min.compaction.lag.ms", "headwater.topics.segment.*",
                 "streaming.query.timespan.seconds", "debezium.source.snapshot.mode",
                 "debezium.sink.type", LENIENT):
        assert known(name), name


def test_code_and_files_are_not_claims() -> None:
    assert _is_code_or_file("headwater.topics.record.parse_line")
    assert _is_code_or_file("headwater.connectors")
    assert _is_code_or_file("capture.build_runtime")
    assert _is_code_or_file("connector.json")
    assert not _is_code_or_file("headwater.topics.dir")
    assert not _is_code_or_file("snapshot.mode")


def test_readme_code_map_names_every_package() -> None:
    # The README's map of the code ("How it is built") once named 11 of the packages.
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## How it is built"):]
    block = section[section.index("```") + 3:]
    block = block[:block.index("```")]
    parts = {f"{p.name}/" for p in SRC.iterdir() if (p / "__init__.py").exists()}
    parts |= {p.name for p in SRC.glob("*.py") if p.name != "__init__.py"}
    missing = sorted(p for p in parts if not re.search(rf"(?<![\w/]){re.escape(p)}", block))
    assert not missing, f"the README's map of the code leaves out {missing}"
