"""binlog_row_image=NOBLOB on a real MariaDB: the BLOB and TEXT columns an image leaves out carry
Debezium's unavailable-value placeholder (`unavailable.value.placeholder`: bytes for BLOB,
text for TEXT), as Debezium 3.x's alignRowToTable writes them; MINIMAL is still refused."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from headwater.testing.replay import events

from .conftest import MariaEnv, wait_for

pytestmark = [pytest.mark.integration]

TEXT = "__debezium_unavailable_value"  # a BLOB's: these bytes, base64 in JSON (bytes mode)


@pytest.fixture()
def image(menv: MariaEnv) -> Iterator[Any]:
    """Sets binlog_row_image globally (the connector's check) and for the writer's session;
    FULL again afterwards (the server is shared by the worker's tests)."""
    def set_image(value: str) -> None:
        menv.sql(f"SET GLOBAL binlog_row_image = '{value}'")
        menv.sql(f"SET SESSION binlog_row_image = '{value}'")

    try:
        yield set_image
    finally:
        menv.sql("SET GLOBAL binlog_row_image = 'FULL'")
        menv.sql("SET SESSION binlog_row_image = 'FULL'")


def _values(env: MariaEnv) -> list[dict[str, Any]]:
    return [v for _, _, v in events(env.topics, env.topic("docs")) if v is not None]


@pytest.mark.parametrize(("placeholder", "text"), [
    (None, TEXT), ("hex:414243", "ABC")])  # unset: Debezium's default
def test_noblob_columns_left_out_carry_the_placeholder(
        menv: MariaEnv, image: Any, placeholder: str | None, text: str) -> None:
    blob = base64.b64encode(text.encode()).decode()
    menv.sql("CREATE TABLE docs (id int PRIMARY KEY, n int NOT NULL, body text, "
             "doc mediumblob, note varchar(10))")
    image("NOBLOB")
    extra = {"snapshot.mode": "no_data"}
    if placeholder is not None:
        extra["unavailable.value.placeholder"] = placeholder
    capture = menv.capture(extra)
    try:
        wait_for(lambda: "file" in menv.stored_offset(), timeout=60, what="streaming")
        menv.sql("INSERT INTO docs VALUES (1, 1, 'hello', x'0102', 'a')")
        menv.sql("UPDATE docs SET n = 2 WHERE id = 1")  # neither BLOB nor TEXT changes
        menv.sql("UPDATE docs SET body = 'new' WHERE id = 1")  # the TEXT column changes
        menv.sql("DELETE FROM docs WHERE id = 1")
        wait_for(lambda: len(_values(menv)) >= 4, timeout=60, what="four events")
    finally:
        capture.stop()
    ins, upd, upd_text, dele = _values(menv)
    assert ins["op"] == "c" and ins["after"] == {
        "id": 1, "n": 1, "body": "hello", "doc": base64.b64encode(b"\x01\x02").decode(),
        "note": "a"}
    assert upd["op"] == "u"
    assert upd["before"] == {"id": 1, "n": 1, "body": text, "doc": blob, "note": "a"}
    assert upd["after"] == {"id": 1, "n": 2, "body": text, "doc": blob, "note": "a"}
    assert upd_text["after"] == {"id": 1, "n": 2, "body": "new", "doc": blob, "note": "a"}
    assert dele["op"] == "d"
    assert dele["before"] == {"id": 1, "n": 2, "body": text, "doc": blob, "note": "a"}


def test_minimal_is_refused(menv: MariaEnv, image: Any) -> None:
    image("MINIMAL")
    capture = menv.capture({"snapshot.mode": "no_data"})
    wait_for(lambda: capture.error is not None or not capture.thread.is_alive(), timeout=60,
             what="the start to fail")
    with pytest.raises(Exception, match=r"binlog_row_image is MINIMAL \(FULL or NOBLOB"):
        capture.stop()
