"""The SCD1 rules every Spark-side target applies to a batch's net rows, as DataFrames and
MERGE clauses: the delta-spark target (`delta_spark`) and the Iceberg one (`iceberg_target`)
share them, so that the two cannot drift apart from each other or from delta-rs's
(`delta_target.DeltaTarget.apply_scd1_net`).

The rules: a row older than the last remembered truncate is dropped; a key's remembered
delete keeps out an older upsert arriving later (that delete itself is kept: a replay after a
crash finds it remembered but maybe not yet applied); a MERGE lets only a newer
`__hw_sequence` win; an unchanged-TOAST flag keeps the target's value.
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from headwater.pipeline.change_frame import ChangeFrame
from headwater.pipeline.changelog_once import OFFSET_DIGITS
from headwater.pipeline.columnar import OP, SEQ, TOAST_FLAG
from headwater.pipeline.decode import Column
from headwater.pipeline.scd2 import ACTION as ACTION  # noqa: PLC0414 (re-exported)
from headwater.pipeline.scd2 import END as END  # noqa: PLC0414 (re-exported)
from headwater.pipeline.scd2 import KIND
from headwater.pipeline.scd2 import START as START  # noqa: PLC0414 (re-exported)

KEY = "__hw_key"  # a row's key as the state table names it (`delta_target.key_json_array`)
TOMB = "__hw_tomb"
FLOOR = "__hw_floor"
POS = "__hw_pos"  # a changelog row's source position (`changelog_once.position`)
FIRST = "__hw_first"  # the lowest offset of a changelog row's identity in the batch
SEEN = "__hw_seen_"  # the changelog's own rows' columns, in `first_deliveries`


def q(name: str) -> str:
    """A quoted Spark SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def with_key(rows: Any, keys: tuple[str, ...], columns: tuple[Column, ...]) -> Any:
    """`rows` plus `__hw_key`, each row's key as `delta_target.key_json_array` writes it
    into the state table.  A single integer key in Spark SQL; any other key by that same
    function in the executors' Python workers (`mapInArrow`), with the key columns cast back
    to the decoder's Arrow types, so that the text is byte for byte the state's."""
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)
    from pyspark.sql.types import StringType, StructField, StructType

    types = {c.name: c.type.arrow for c in columns}
    if len(keys) == 1 and pa.types.is_integer(types[keys[0]]):
        return rows.withColumn(KEY, F.concat(F.lit("["), F.col(q(keys[0])).cast("string"),
                                             F.lit("]")))
    key_types = {k: types[k] for k in keys}

    def add(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from headwater.pipeline.delta_target import key_json_array as key_json

        for batch in batches:
            cast = pa.table({k: batch.column(k).cast(t) for k, t in key_types.items()})
            yield batch.append_column(KEY, key_json(cast, keys))

    out = StructType([*rows.schema.fields, StructField(KEY, StringType())])
    return rows.mapInArrow(add, out)


def after_state(net: Any, state: Any | None) -> Any:
    """`net` (with `__hw_key`) without the rows the state (`key`, `kind`, `__hw_sequence`:
    truncates and SCD1 deletes) keeps out; lazy, no Spark job of its own."""
    from pyspark.sql import functions as F  # noqa: N812

    if state is None:
        return net
    floor = state.where(F.col("kind") == "truncate").agg(F.max(SEQ).alias(FLOOR))
    net = net.crossJoin(floor).where(
        F.col(FLOOR).isNull() | (F.col(SEQ) >= F.col(FLOOR))).drop(FLOOR)
    tombs = state.where(F.col("kind") == "delete").select(
        F.col("key").alias(KEY), F.col(SEQ).alias(TOMB))
    seq, tomb = F.col(SEQ), F.coalesce(F.col(TOMB), F.lit(""))
    return net.join(tombs, KEY, "left").where(
        (seq > tomb) | ((seq == tomb) & (F.col(OP) == "d"))).drop(TOMB)


@dataclass(frozen=True, slots=True)
class Scd1Merge:
    """The clauses of the table's SCD1 MERGE (target alias `t`, source alias `s`)."""

    match: str  # the key columns equal
    updates: dict[str, str]  # quoted target column -> expression
    inserts: dict[str, str]
    update_when: str  # an upsert newer than the target's row
    delete_when: str  # a delete newer than the target's row
    insert_when: str  # an upsert of a key the target does not hold

    def sql(self, table: str, source: str) -> str:
        """The MERGE INTO statement of the clauses (Spark SQL, for a DataSource V2 table)."""
        sets = ", ".join(f"t.{c} = {e}" for c, e in self.updates.items())
        names = ", ".join(self.inserts)
        values = ", ".join(self.inserts.values())
        return (f"MERGE INTO {table} t USING {source} s ON {self.match} "
                f"WHEN MATCHED AND {self.update_when} THEN UPDATE SET {sets} "
                f"WHEN MATCHED AND {self.delete_when} THEN DELETE "
                f"WHEN NOT MATCHED AND {self.insert_when} THEN INSERT ({names}) "
                f"VALUES ({values})")


def scd1_merge(columns: list[str], keys: tuple[str, ...], toast: list[str]) -> Scd1Merge:
    """The MERGE of net rows (`columns`, `__hw_sequence`, `__hw_op`, TOAST flags of `toast`)
    into a table of `columns` plus `__hw_sequence`."""
    updates = {
        q(c): (f"CASE WHEN s.{q(TOAST_FLAG + c)} THEN t.{q(c)} ELSE s.{q(c)} END"
               if c in toast else f"s.{q(c)}")
        for c in columns
    }
    updates[q(SEQ)] = f"s.{q(SEQ)}"
    inserts = {q(c): f"s.{q(c)}" for c in [*columns, SEQ]}
    newer = f"s.{q(SEQ)} > t.{q(SEQ)}"
    return Scd1Merge(" AND ".join(f"t.{q(k)} = s.{q(k)}" for k in keys), updates, inserts,
                     f"s.{q(OP)} = 'u' AND {newer}", f"s.{q(OP)} = 'd' AND {newer}",
                     f"s.{q(OP)} = 'u'")


def first_deliveries(rows: Any, seen: Any | None, keys: tuple[str, ...]) -> Any:
    """Changelog rows (`columnar.decode_changelog`'s columns) without re-deliveries, as
    `changelog_once.first_mask` keeps them, in Spark: of the rows sharing an identity (the
    source position, the sequence without its 16-digit topic offset; the op; the key, nulls
    equal) the one of the lowest `__offset`, unless the changelog already holds that identity
    (`seen`: the changelog's rows from the batch's lowest position on, None when the table
    does not exist); a keyless table's snapshot reads (op `r`) are always kept.  Lazy: no
    Spark job of its own."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

    def position(seq: Any) -> Any:
        # (`changelog_once.position`: a sequence shorter than the offset gives "")
        return F.expr(f"substring({q(seq)}, 1, length({q(seq)}) - {OFFSET_DIGITS})")

    op = "__op"
    ident = [POS, op, *keys]
    with_pos = rows.withColumn(POS, position(SEQ)).withColumn(
        FIRST, F.min("__offset").over(Window.partitionBy(*map(q, ident))))
    first = F.col("__offset") == F.col(FIRST)
    snapshot = F.col(op).eqNullSafe("r")
    out = with_pos.where(first | snapshot if not keys else first).drop(FIRST)
    if seen is not None:
        old = seen.select(position(SEQ).alias(SEEN + POS),
                          F.col(op).cast("string").alias(SEEN + op),
                          *(F.col(q(k)).alias(SEEN + k) for k in keys)).distinct()
        match = [F.col(q(c)).eqNullSafe(F.col(q(SEEN + c))) for c in ident]
        if keys:
            out = out.join(old, match, "left_anti")
        else:  # (a keyless table's snapshot reads are never taken for re-deliveries)
            out = out.where(~snapshot).join(old, match, "left_anti").unionByName(
                out.where(snapshot))
    return out.drop(POS)


# -- SCD type 2 ---------------------------------------------------------------------------------



def batch_points(rows: Any, keys: tuple[str, ...]) -> tuple[Any, str | None, int]:
    """An SCD2 batch's events (`decode_changelog(flags=True)`'s rows) without re-deliveries
    (`first_deliveries`, the identity `net.dedup` uses), the newest truncate's sequence
    (None: no truncate) and the number of deletes: what the driver's history takes from
    `net.dedup` (`runner.apply_changes`).  One Spark job, for the two figures."""
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

    events = first_deliveries(rows, None, keys)
    stats = events.agg(F.max(F.when(F.col("__op") == "t", F.col(q(SEQ)))).alias("t"),
                       F.count(F.when(F.col("__op") == "d", 1)).alias("d")).first()
    return events, stats["t"], int(stats["d"])


def scd2_history(events: Any, table: Any | None, remembered: Any | None, floor: str | None,
                 keys: tuple[str, ...], columns: tuple[Column, ...], taken: list[str],
                 toast: tuple[str, ...], tracked: frozenset[str]) -> Any:
    """The SCD2 rows a batch changes, built on the executors: per key of the batch's events
    (`batch_points`), its stored versions (`table`: the history table, None when there is
    none), its remembered deletes (`remembered`: the state's `scd2_delete` rows) and its
    events are grouped by key (one task holds a key) and rebuilt by `scd2.changed_versions`
    (`scd2.rebuild`), the delta-rs target's history code itself, with the truncate `floor`.
    The result: the rebuilt versions that differ from the stored ones (`__hw_action` 'u')
    and the stored versions the rebuild dropped ('d', key and start only), in the columns
    `taken` plus `__START_AT`, `__END_AT` and `__hw_action`.  `columns` are the batch's,
    `taken` those the table takes (`schema.evolution`).  Lazy: no Spark job of its own."""
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StringType, StructField, StructType

    from headwater.pipeline.scd2 import changed_versions

    names = [c.name for c in columns]
    keyed = events.where(" AND ".join(["`__op` <> 't'",
                                       *(f"{q(k)} IS NOT NULL" for k in keys)]))
    flags = [TOAST_FLAG + c for c in toast]
    types = {f.name: f.dataType for f in events.schema.fields}

    def shaped(frame: Any, present: set[str], kind: str, seq: Any, op: Any,
               start: Any, end: Any) -> Any:
        return frame.select(
            *((F.col(q(n)) if n in present else F.lit(None)).cast(types[n]).alias(n)
              for n in names),
            start.cast("string").alias(START), end.cast("string").alias(END),
            seq.cast("string").alias(SEQ), op.cast("string").alias("__op"),
            *((F.col(q(c)) if kind == "e" else F.lit(False)).alias(c) for c in flags),
            F.lit(kind).alias(KIND))

    none = F.lit(None)
    parts = [shaped(keyed, set(names), "e", F.col(q(SEQ)), F.col("__op"), none, none)]
    batch_keys = keyed.select(*(q(k) for k in keys)).distinct()
    if table is not None:
        stored = table.join(batch_keys, list(keys), "left_semi")
        parts.append(shaped(stored, set(table.columns), "v", none, none, F.col(q(START)),
                            F.col(q(END))))
    if remembered is not None:  # (the state names a key by `key_json_array`'s text)
        tombs = remembered.where(F.col("kind") == "scd2_delete").join(
            with_key(batch_keys, keys, columns), F.col("key") == F.col(KEY), "inner")
        parts.append(shaped(tombs, set(keys), "x", F.col(q(SEQ)), F.lit("d"), none, none))
    grouped = parts[0]
    for p in parts[1:]:
        grouped = grouped.unionByName(p)
    out_schema = StructType([*(StructField(n, types[n]) for n in taken),
                             *(StructField(c, StringType()) for c in (START, END, ACTION))])
    out_arrow = to_arrow_schema(out_schema, timestamp_utc=True)

    def build(group: pa.Table) -> pa.Table:
        return changed_versions(group, keys, taken, toast, tracked, floor, out_arrow)

    return grouped.groupBy(*(q(k) for k in keys)).applyInArrow(build, out_schema)


def remembered_points(spark: Any, events: Any, truncate: str | None, deletes: int,
                      keys: tuple[str, ...], columns: tuple[Column, ...]) -> Any | None:
    """What an SCD2 batch adds to the state table (`key`, `kind`, `__hw_sequence`): each
    delete of `batch_points`' events as an `scd2_delete` point, the truncate as `truncate`
    (None: nothing to remember).  Lazy."""
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

    out = None
    if deletes:
        out = with_key(events.where(F.col("__op") == "d"), keys, columns).select(
            F.col(KEY).alias("key"), F.lit("scd2_delete").alias("kind"), F.col(q(SEQ)))
    if truncate is not None:
        row = spark.createDataFrame([("", "truncate", truncate)],
                                    f"key string, kind string, {q(SEQ)} string")
        out = row if out is None else out.unionByName(row)
    return out


def history_floor(state: Any | None, truncate: str | None) -> str | None:
    """The truncate floor of an SCD2 batch: the newest of the state's truncates and the
    batch's own (`truncate`).  A Spark job when there is a state table."""
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

    stored = None
    if state is not None:
        stored = state.where(F.col("kind") == "truncate").agg(F.max(q(SEQ))).first()[0]
    found = [x for x in (stored, truncate) if x is not None]
    return max(found) if found else None


@contextlib.contextmanager
def staging_folder(frame: ChangeFrame, root: Path, batch_id: int) -> Iterator[str]:
    """A folder for a batch's intermediate rows (`scd2_history`'s, computed once before any
    commit changes what they are read from): the executors' staging folder of the batch
    (removed with it), else a new one under `root`, removed afterwards."""
    if frame.staging is not None:
        yield frame.staging
        return
    folder = root / f"{batch_id}-{uuid.uuid4().hex}"
    try:
        yield str(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def scd2_merge_sql(table: str, source: str, keys: tuple[str, ...], taken: list[str]) -> str:
    """The MERGE INTO statement (Spark SQL, for a DataSource V2 table) that writes the rows of
    `scd2_history` (`source`) into the history `table`: a version is matched by its key and
    start; 'd' removes it, 'u' rewrites or inserts it."""
    match = " AND ".join([*(f"t.{q(k)} = s.{q(k)}" for k in keys),
                          f"t.{q(START)} = s.{q(START)}"])
    sets = ", ".join(f"t.{q(c)} = s.{q(c)}" for c in [*taken, END])
    names = [q(c) for c in [*taken, START, END]]
    values = ", ".join(f"s.{n}" for n in names)
    return (f"MERGE INTO {table} t USING {source} s ON {match} "
            f"WHEN MATCHED AND s.{q(ACTION)} = 'd' THEN DELETE "
            f"WHEN MATCHED THEN UPDATE SET {sets} "
            f"WHEN NOT MATCHED AND s.{q(ACTION)} = 'u' THEN INSERT ({', '.join(names)}) "
            f"VALUES ({values})")
