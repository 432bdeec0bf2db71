"""The README's first command: a local PostgreSQL with an inventory database, captured live.

Starts a throwaway PostgreSQL, creates `customers`, `products` and `orders`, runs the connector
(snapshot, then streaming), makes a few inserts, updates and deletes (one of them a primary key
change), and prints the resulting change events readably, then the topics and the offsets.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.rule import Rule
from rich.table import Table

from headwater.testing.localpg import LocalPostgres, wait_for
from headwater.topics import reader

console = Console(highlight=False)

SCHEMA = """
CREATE SCHEMA inventory;
CREATE TABLE inventory.customers (
  id SERIAL PRIMARY KEY, first_name VARCHAR(255) NOT NULL, last_name VARCHAR(255) NOT NULL,
  email VARCHAR(255) NOT NULL UNIQUE);
CREATE TABLE inventory.products (
  id SERIAL PRIMARY KEY, name VARCHAR(255) NOT NULL, description TEXT,
  weight NUMERIC(8,3), price NUMERIC(10,2) NOT NULL, added TIMESTAMPTZ NOT NULL DEFAULT now());
CREATE TABLE inventory.orders (
  id SERIAL PRIMARY KEY, order_date DATE NOT NULL,
  purchaser INTEGER NOT NULL REFERENCES inventory.customers(id),
  quantity INTEGER NOT NULL, product_id INTEGER NOT NULL REFERENCES inventory.products(id));
INSERT INTO inventory.customers (first_name, last_name, email) VALUES
  ('Sally', 'Thomas', 'sally.thomas@acme.com'), ('George', 'Bailey', 'gbailey@foobar.com'),
  ('Edward', 'Walker', 'ed@walker.com'), ('Anne', 'Kretchmar', 'annek@noanswer.org');
INSERT INTO inventory.products (name, description, weight, price) VALUES
  ('scooter', 'Small 2-wheel scooter', 3.14, 49.90),
  ('car battery', '12V car battery', 8.1, 89.00),
  ('hammer', '12oz carpenter''s hammer', 0.75, 12.50);
INSERT INTO inventory.orders (order_date, purchaser, quantity, product_id) VALUES
  ('2016-01-16', 1, 1, 1), ('2016-01-17', 2, 2, 2), ('2016-02-19', 2, 2, 3);
"""

CHANGES = [
    ("insert a customer",
     "INSERT INTO inventory.customers (first_name, last_name, email) "
     "VALUES ('Kenneth', 'Anderson', 'kander@acme.com')"),
    ("update a customer", "UPDATE inventory.customers SET first_name = 'Anne Marie' WHERE id = 4"),
    ("a multi-table transaction",
     "BEGIN; UPDATE inventory.products SET price = 44.90 WHERE id = 1; "
     "INSERT INTO inventory.orders (order_date, purchaser, quantity, product_id) "
     "VALUES ('2016-02-21', 4, 1, 1); COMMIT"),
    ("delete an order", "DELETE FROM inventory.orders WHERE id = 3"),
    ("change a primary key", "UPDATE inventory.products SET id = 103 WHERE id = 3"),
]


def _show(root: Path, topics: list[str], start: dict[str, int]) -> dict[str, int]:
    from headwater.ops.pretty import format_record

    end = dict(start)
    for topic in topics:
        for rec in reader.read(root, topic, from_offset=start.get(topic, 0)):
            console.print("  " + format_record(rec))
            end[topic] = rec.offset + 1
    return end


def _materialize(config: Path, conn_factory: Any) -> None:
    """Runs the Spark pipeline once and shows each Delta table next to its source table."""
    from headwater.pipeline.config import load_pipeline_config
    from headwater.pipeline.delta_target import read_table
    from headwater.pipeline.runner import run

    console.print(Rule("Spark pipeline: topic log -> Delta Lake (SCD type 1)"))
    cfg = load_pipeline_config(config)
    started = time.monotonic()
    run(cfg, once=True)
    console.print(f"pipeline run took {time.monotonic() - started:.1f}s (Spark local[*])")
    conn = conn_factory()
    try:
        for name in ("customers", "products", "orders"):
            delta = read_table(cfg.delta_path / "inventory" / name).to_pylist()
            with conn.cursor() as cur:
                cur.execute(f"SELECT * FROM inventory.{name} ORDER BY id")
                cols = [d.name for d in cur.description]
                source = [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
            delta.sort(key=lambda r: r["id"])
            table = Table(title=f"inventory.{name}: PostgreSQL | Delta "
                                f"({cfg.delta_path / 'inventory' / name})")
            table.add_column("PostgreSQL")
            table.add_column("Delta Lake")
            for i in range(max(len(source), len(delta))):
                left = _fmt(source[i]) if i < len(source) else ""
                right = _fmt(delta[i]) if i < len(delta) else ""
                table.add_row(left, right, style=None if left == right else "red")
            console.print(table)
            verdict = "[green]equal[/green]" if _norm(source) == _norm(delta) else "[red]DIFFERENT"
            console.print(f"inventory.{name}: {len(source)} source rows, {len(delta)} Delta rows: "
                          f"{verdict}")
    finally:
        conn.close()


def _fmt(row: dict[str, Any]) -> str:
    return ", ".join(f"{v}" for v in row.values())


def _norm(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(({k: v for k, v in r.items()} for r in rows), key=lambda r: r["id"])


def main(workdir: Path = Path("demo-data")) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s (%(name)s)")
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    workdir = workdir.resolve()
    console.print(Rule("Headwater demo: PostgreSQL -> capture -> topic log"))
    pg = LocalPostgres(base_dir=Path("/tmp") / f"headwater-demo-pg-{workdir.stat().st_ino}")
    console.print(f"starting PostgreSQL ({pg.bindir}) on 127.0.0.1:{pg.port} ...")
    pg.start()
    try:
        pg.create_database("inventory")
        conn = pg.connect("inventory")
        with conn.cursor() as cur:
            cur.execute(SCHEMA)
        config = workdir / "inventory-connector.properties"
        config.write_text(
            "name=inventory-connector\n"
            "connector.class=io.debezium.connector.postgresql.PostgresConnector\n"
            f"database.hostname=127.0.0.1\ndatabase.port={pg.port}\n"
            "database.user=postgres\ndatabase.password=${env:HEADWATER_DEMO_PASSWORD}\n"
            "database.dbname=inventory\ntopic.prefix=dbserver1\n"
            "schema.include.list=inventory\nplugin.name=pgoutput\n"
            "slot.name=headwater_demo\npublication.autocreate.mode=filtered\n"
            "headwater.topics.dir=topics\noffset.storage.file.filename=offsets.json\n"
            "headwater.topics.segment.ms=200\npoll.interval.ms=100\n"
            "headwater.pipeline.delta.path=delta\n"
            "headwater.pipeline.checkpoint.dir=checkpoints/pipeline\n"
        )
        os.environ.setdefault("HEADWATER_DEMO_PASSWORD", "not-needed-trust-auth")
        console.print(f"connector configuration: {config}")
        console.print(config.read_text().replace("\n", "\n  "), style="dim")

        from headwater.capture import build_runtime
        from headwater.connectors.postgres.config import load_postgres_config

        cfg, _ = load_postgres_config(config)
        runtime = build_runtime(cfg)
        thread = threading.Thread(target=runtime.run, daemon=True)
        thread.start()
        root = Path(cfg.headwater_topics_dir)
        topics = [f"dbserver1.inventory.{t}" for t in ("customers", "products", "orders")]
        wait_for(lambda: runtime.metrics.snapshot_completed, timeout=60, what="snapshot")
        console.print(Rule("snapshot (op=r)"))
        time.sleep(0.3)
        seen = _show(root, topics, {})
        for title, sql in CHANGES:
            console.print(Rule(f"{title}: {sql}"))
            before = runtime.metrics.total_events_seen
            with conn.cursor() as cur:
                cur.execute(sql)
            wait_for(lambda b=before: runtime.metrics.total_events_seen > b, timeout=30,
                     what=title)
            time.sleep(0.2)
            seen = _show(root, topics, seen)
        runtime.stop()
        thread.join(30)
        conn.close()
        console.print(Rule("topics"))
        table = Table("topic", "offsets", "records", "bytes")
        for t in reader.list_topics(root):
            table.add_row(t.name, f"{t.start_offset}..{t.end_offset - 1}", str(t.record_count),
                          str(t.size_bytes))
        console.print(table)
        console.print(f"offsets: {Path(cfg.offset_storage_file_filename).read_text()}")
        _materialize(config, conn_factory=lambda: pg.connect("inventory"))
        console.print(
            f"\nTry: .venv/bin/headwater topics tail dbserver1.inventory.customers "
            f"--from-beginning --pretty --dir {root}\n"
            f"     .venv/bin/headwater pipeline {config} --once"
        )
    finally:
        pg.cleanup()


if __name__ == "__main__":
    main()
