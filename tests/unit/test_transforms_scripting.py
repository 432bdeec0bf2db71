"""Filter and ContentBasedRouter with the safe expression subset (no JSR-223 engine)."""

from __future__ import annotations

import pytest

from headwater.connect.props import PluginConfigError
from headwater.connect.record import ConnectRecord, Header, TransformError
from headwater.transforms.chain import build_chain
from headwater.transforms.expression import evaluate, parse

FILTER = "io.debezium.transforms.Filter"
ROUTER = "io.debezium.transforms.ContentBasedRouter"


def event(op: str, before: dict[str, int] | None, after: dict[str, int] | None,
          topic: str = "inv.public.orders") -> ConnectRecord:
    return ConnectRecord(topic, None, None, {"id": 1}, None,
                         {"op": op, "before": before, "after": after, "source": {"ts_ms": 1}},
                         0, (Header("idh", None, 7),))


def chain(cls: str, **props: str):  # type: ignore[no-untyped-def]
    return build_chain({"transforms": "s", "transforms.s.type": cls,
                        **{f"transforms.s.{k.replace('_', '.')}": v for k, v in props.items()}})


def test_filter_groovy_condition_from_the_debezium_docs() -> None:
    c = chain(FILTER, language="jsr223.groovy",
              condition="value.op == 'u' && value.before.id == 2")
    assert c.apply(event("u", {"id": 2}, {"id": 2})) is not None
    assert c.apply(event("u", {"id": 3}, {"id": 3})) is None
    assert c.apply(event("c", None, {"id": 2})) is None  # && short-circuits: no null access


def test_filter_graal_js_getters_numbers_headers_and_null_checks() -> None:
    c = chain(FILTER, language="jsr223.graal.js",
              condition="value.get('after') != null && value.get('after').get('id') > 5 "
                        "&& header.idh.value === 7")
    assert c.apply(event("c", None, {"id": 6})) is not None
    assert c.apply(event("c", None, {"id": 5})) is None
    assert c.apply(event("d", {"id": 9}, None)) is None
    tomb = ConnectRecord("t", None, None, {"id": 1}, None, None, 0)
    assert c.apply(tomb) is tomb  # null.handling.mode=keep
    drop = chain(FILTER, language="jsr223.groovy", condition="true",
                 null_handling_mode="drop")
    assert drop.apply(tomb) is None


def test_member_access_on_null_is_an_error_unless_safe_navigation() -> None:
    c = chain(FILTER, language="jsr223.groovy", condition="value.after.id > 5")
    with pytest.raises(TransformError, match="of null"):
        c.apply(event("d", {"id": 9}, None))
    c = chain(FILTER, language="jsr223.groovy", condition="value.after?.id == null")
    assert c.apply(event("d", {"id": 9}, None)) is not None


def test_content_based_router_and_topic_regex() -> None:
    c = chain(ROUTER, language="jsr223.groovy",
              topic_expression="value.op == 'd' ? 'deletes' : (topic + '_' + value.op)",
              topic_regex=r"inv\..*")
    out = c.apply(event("d", {"id": 1}, None))
    assert out is not None and out.topic == "deletes"
    out = c.apply(event("c", None, {"id": 1}))
    assert out is not None and out.topic == "inv.public.orders_c"
    other = event("c", None, {"id": 1}, topic="other")
    assert c.apply(other) is other


@pytest.mark.parametrize(("expression", "expected"), [
    ("1 + 2 * 3 == 7", True), ("!(1 > 2) || false", True), ("'a' + 1", "a1"),
    ("topic.startsWith('inv') && topic.matches('inv\\\\..*')", True), ("-3 % 2", -1),
    ("null == null", True), ("value.op.toUpperCase()", "C"), ("key['id'] >= 1.5", False),
])
def test_expressions(expression: str, expected: object) -> None:
    env = {"value": {"op": "c"}, "key": {"id": 1}, "topic": "inv.x", "valueSchema": None,
           "keySchema": None, "header": {}}
    assert evaluate(parse(expression), env) == expected


@pytest.mark.parametrize(("props", "message"), [
    ({"language": "jsr223.python", "condition": "true"}, "jsr223.python"),
    ({"language": "jsr223.groovy", "condition": "value.op = 'd'"}, "unexpected character|"
     "unsupported syntax"),
    ({"language": "jsr223.groovy", "condition": "System.exit(0)"}, "unknown variable"),
    ({"language": "jsr223.groovy", "condition": "{ -> true }"}, "unexpected character"),
    ({"language": "jsr223.groovy"}, "condition: missing"),
])
def test_refused_expressions(props: dict[str, str], message: str) -> None:
    with pytest.raises(PluginConfigError, match=message):
        build_chain({"transforms": "s", "transforms.s.type": FILTER,
                     **{f"transforms.s.{k}": v for k, v in props.items()}})
