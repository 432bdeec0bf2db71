"""The web console in headless Chromium: it shows a running PostgreSQL connector, its pause
button pauses it, and the REST status agrees; a screenshot is kept in the test's tmp dir."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.testing.localpg import LocalPostgres
from headwater.testing.timeouts import scaled

from .conftest import Served, wait_state

pytestmark = [pytest.mark.integration]
webdriver = pytest.importorskip("selenium.webdriver")
CHROMIUM = shutil.which("chromium")
DRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def pg() -> Iterator[LocalPostgres]:
    server = LocalPostgres().start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture()
def browser() -> Iterator[Any]:
    if CHROMIUM is None or DRIVER is None:
        pytest.skip("chromium and chromium-driver are not installed (scripts/setup.sh)")
    from selenium.webdriver.chrome.service import Service as DriverService

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--window-size=1400,900"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=DriverService(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(what: str, check: Any, timeout: float = 60) -> Any:
    deadline = time.monotonic() + scaled(timeout)
    while time.monotonic() < deadline:
        try:
            got = check()
        except Exception:
            got = None
        if got:
            return got
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_console_shows_and_pauses_a_connector(pg: LocalPostgres, served: Served,
                                              browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    pg.create_database("console_db")
    pg.psql("CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t SELECT generate_series(1, 40)",
            dbname="console_db")
    cfg = {"connector.class": "io.debezium.connector.postgresql.PostgresConnector",
           "database.hostname": "127.0.0.1", "database.port": pg.port,
           "database.user": pg.user, "database.password": "unused",
           "database.dbname": "console_db", "topic.prefix": "pgc", "plugin.name": "pgoutput",
           "slot.name": "console_slot", "publication.name": "console_pub"}
    with served.client() as c:
        assert c.post("/connectors", json={"name": "pgc", "config": cfg}).status_code == 201
        wait_state(c, "pgc", "RUNNING", 120)
        browser.get(f"{served.url}/console")
        row = '#connectors tr[data-connector="pgc"]'
        wait_for("the connector RUNNING in the console", lambda: browser.find_element(
            By.CSS_SELECTOR, f'{row} [data-field="state"]').text == "RUNNING")
        wait_for("its 40 snapshot events", lambda: browser.find_element(
            By.CSS_SELECTOR, f'{row} [data-field="events"]').text == "40")
        assert "public.t" in browser.find_element(By.ID, "snapshot").text
        browser.save_screenshot(str(tmp_path / "console-running.png"))
        browser.find_element(By.CSS_SELECTOR, f'{row} button[data-action="pause"]').click()
        wait_state(c, "pgc", "PAUSED", 60)
        wait_for("PAUSED in the console", lambda: browser.find_element(
            By.CSS_SELECTOR, f'{row} [data-field="state"]').text == "PAUSED")
        assert browser.find_element(By.CSS_SELECTOR, f'{row} button[data-action="resume"]')
        assert c.get("/connectors/pgc/status").json()["connector"]["state"] == "PAUSED"
        browser.save_screenshot(str(tmp_path / "console-paused.png"))
        assert browser.find_element(By.ID, "problem").text == ""
        # The incremental snapshot button's signal needs the file channel.
        no_file = c.post("/connectors/pgc/signals", json={"type": "execute-snapshot", "data": {
            "data-collections": ["public.t"], "type": "incremental"}})
        assert no_file.status_code == 409 and "signal.enabled.channels" in no_file.json()[
            "message"]
        assert c.get("/connectors/pgc/metrics").json()["plugin"] == "postgres"
    assert (tmp_path / "console-paused.png").stat().st_size > 0
