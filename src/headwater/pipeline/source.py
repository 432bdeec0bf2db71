"""The topic log as the pipeline reads it: its positions for the pipeline's Spark source
(`TopicLogPositions`, the `topics` store of `positions`) and its records for a batch's ranges
(`read_range`; `columnar.scan` for the column-wise path).

Spark's file source would parse every JSON line in the JVM and ship each event, schema and all,
to Python; the pipeline's source gives Spark only offset ranges, `{topic: next offset}`, and
the batch reads them straight from the segment files.  Records are visible as soon as the
capture has written them (in-progress segments included), so freshness does not wait for
segments to seal.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

from headwater.topics import check, reader
from headwater.topics.damage import TopicLogDamaged
from headwater.topics.record import BadLineError, parse_line, split_line
from headwater.topics.retention import log_start, write_consumer
from headwater.topics.segment import compacted_end, covers, live_segments, open_segment

NON_TABLE_SUFFIXES = (".transaction",)
NON_TABLE_PREFIXES = ("__debezium-heartbeat",)


def is_table_topic(topic: str) -> bool:
    return not topic.endswith(NON_TABLE_SUFFIXES) and not topic.startswith(NON_TABLE_PREFIXES)


def end_offsets(root: Path, patterns: str) -> dict[str, int]:
    """Next offset of every table topic matching one of the comma-separated globs."""
    globs = [p.strip() for p in patterns.split(",") if p.strip()]
    return {
        t.name: t.end_offset
        for t in reader.list_topics(root)
        if is_table_topic(t.name) and any(fnmatch.fnmatchcase(t.name, g) for g in globs)
    }


def rewound(root: Path, start: dict[str, int], latest: dict[str, int]) -> TopicLogDamaged | None:
    """A topic that ends before what the checkpoint has already read: records were cut from
    the log (`topics verify --repair`, a restored backup).  New records would then reuse the
    offsets the checkpoint has passed and be skipped without a word, so it is an error."""
    for topic, end in sorted(latest.items()):
        read = start.get(topic, 0)
        if end < read:
            return TopicLogDamaged(
                topic, root / topic, end, 0,
                f"the log ends at offset {end} but this pipeline's checkpoint has read up to "
                f"offset {read}: records were removed from the log (e.g. by `topics verify "
                f"--repair`), and new records would reuse offsets {end}..{read - 1} and be "
                "skipped; start the pipeline with a new checkpoint and target (a new snapshot)")
    return None


def plan(start: dict[str, int], latest: dict[str, int], max_rows: int | None) -> dict[str, int]:
    """End offsets of the next batch: everything new, or at most `max_rows` records in all,
    shared out over the topics in turn so that no topic starves.  `latest` is never behind
    `start` (see `rewound`)."""
    end = {t: max(start.get(t, 0), o) for t, o in latest.items()}
    for t, o in start.items():
        end.setdefault(t, o)
    if max_rows is None:
        return end
    budget = max_rows
    pending = {t: end[t] - start.get(t, 0) for t in end if end[t] > start.get(t, 0)}
    capped = {t: start.get(t, 0) for t in end}
    while budget > 0 and pending:
        share = max(1, budget // len(pending))
        for t in list(pending):
            take = min(share, pending[t], budget)
            capped[t] += take
            pending[t] -= take
            budget -= take
            if pending[t] == 0:
                del pending[t]
            if budget == 0:
                break
    return capped


def _broken(topic: str, path: Path, base: int, first: int, pos: int, expect: int,
            seen: str) -> TopicLogDamaged | None:
    """The damage a fast read ran into, as the checker (the reference) describes it; None
    when it is the crash tail of an in-progress segment (the reader stops there)."""
    damage = check.diagnose(topic, path, base, first)
    if damage is None and check.is_sealed(path):  # pragma: no cover - the two disagree
        damage = TopicLogDamaged(topic, path, expect, pos, seen)
    return damage


def behind_log_start(root: Path, topic: str, start: int, first_kept: int) -> TopicLogDamaged:
    """Retention removed records this pipeline had not read (a consumer not registered, or
    `headwater.topics.retention.ignore.consumers=true`): an error, never a silent skip."""
    return TopicLogDamaged(
        topic, root / topic, start, 0,
        f"the log starts at offset {first_kept} (retention removed the records before it) but "
        f"this pipeline's checkpoint has read only up to offset {start}: records "
        f"{start}..{first_kept - 1} were never read; start the pipeline with a new checkpoint "
        "and target (a new snapshot)")


def read_range(root: Path, topic: str, start: int, end: int
               ) -> Iterator[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of the records start <= offset < end of a topic.

    Checks every line it reads as `headwater.topics.check` does (offsets continue from the log
    start across segments, skipping ahead only inside a compacted segment's range; complete
    record lines; the crash tail of an in-progress segment ends the read) and raises
    `TopicLogDamaged` at a damaged place: a missing record must not become a row missing
    downstream.  A range may start or end inside a compacted gap: it yields what is left."""
    first_kept = log_start(root / topic)
    if start < first_kept:
        raise behind_log_start(root, topic, start, first_kept)
    segments = live_segments(root / topic)
    expect: int | None = first_kept  # offset the next segment must start with (None: unknown)
    last: Path | None = None  # the file read last
    for i, seg in enumerate(segments):
        if last is not None and covers(last, seg):
            continue  # merged since the listing into the file read last: read in it
        nxt = segments[i + 1].base if i + 1 < len(segments) else None
        if seg.base >= end and expect is not None and seg.base != expect:
            raise check.start_mismatch(topic, seg.path, seg.base, expect)  # range's end missing
        if (nxt is not None and nxt <= start) or seg.base >= end:
            expect = None
            continue  # wholly before the range, or after it
        opened = open_segment(seg)
        if opened is None:
            raise FileNotFoundError(f"topic {topic}: segment {seg.path} disappeared")
        f, path, _ = opened
        last = path
        first = seg.base if expect is None else expect
        if seg.base != first:
            f.close()
            raise check.start_mismatch(topic, path, seg.base, first)
        with f:
            expect = yield from _read_segment(topic, path, seg.base, first, f, start, end)
        if expect is None:
            return


def _read_segment(topic: str, path: Path, base: int, first: int, f: BinaryIO, start: int,
                  end: int) -> Generator[tuple[int, bytes | None, bytes | None], None, int | None]:
    """The records of one open segment within [start, end), checked; returns the offset the
    next segment must start with, None when the range ended here."""
    limit = compacted_end(path)  # compacted: offsets may skip ahead up to this range end
    top = -1 if limit is None else limit  # (no offset is below -1: no skipping ahead)
    expect = first
    pos = f.tell()  # (past the lines of segments listed before, in a merged file)
    for line in f:
        if not line.endswith(b"\n"):
            if not check.is_sealed(path):
                break  # the last line of an in-progress segment, still being written
            raise _broken(topic, path, base, first, pos, expect, "line cut short"
                          ) or TopicLogDamaged(topic, path, expect, pos, "line cut short")
        fast = split_line(line)
        if fast is None:
            try:
                rec = parse_line(topic, line)
            except BadLineError as exc:
                damage = _broken(topic, path, base, first, pos, expect, str(exc))
                if damage is not None:
                    raise damage from None
                break  # the crash tail of an in-progress segment
            fast = (rec.offset, rec.key, rec.value)
        offset = fast[0]
        if offset != expect and not expect < offset < top:
            seen = check.unexpected_offset(expect, offset, limit)
            raise _broken(topic, path, base, first, pos, expect, seen) or TopicLogDamaged(
                topic, path, expect, pos, seen)
        expect = offset + 1
        pos += len(line)
        if offset < start:
            continue
        if offset >= end:
            return None
        yield fast
    return expect if limit is None else limit


class TopicLogPositions:
    """The local topic log's positions for the pipeline's Spark source (`positions`):
    `{topic: next offset}` of the table topics matching the option `topics` (globs, comma
    separated) under `path`."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.root = Path(options["path"])
        self.pattern = options.get("topics", "*")
        self.consumer_id = options.get("consumer_id")
        self.registered: dict[str, int] | None = None

    def initial(self) -> dict[str, int]:
        # A new pipeline starts at each topic's log start (retention may have moved it).
        return {t.name: t.start_offset for t in reader.list_topics(self.root)
                if t.start_offset and is_table_topic(t.name)
                and any(fnmatch.fnmatchcase(t.name, g.strip())
                        for g in self.pattern.split(",") if g.strip())}

    def latest(self) -> dict[str, int]:
        return end_offsets(self.root, self.pattern)

    def plan(self, start: dict[str, int], latest: dict[str, int], rows: int | None
             ) -> dict[str, int]:
        damage = rewound(self.root, start, latest)
        if damage is not None:
            raise damage
        # Spark plans a batch only once the one before is committed, so `start` is read for
        # good: registered now, retention and compaction hold back from a pipeline's first
        # batch on (Spark calls `commit` only when it plans the next batch, which a run with
        # Trigger.AvailableNow never does).  A topic not in `start` starts at 0.
        self._register({t: start.get(t, 0) for t in {*latest, *start}})
        return plan(start, latest, rows)

    def committed(self, end: dict[str, int]) -> None:
        # Spark committed the batch up to `end`: retention may remove what is before it.
        self._register(end)

    def close(self) -> None:
        pass

    def _register(self, offsets: dict[str, int]) -> None:
        """This pipeline's marker (`topics.retention.write_consumer`): everything before
        `offsets` is applied and committed."""
        if self.consumer_id and offsets != self.registered:
            write_consumer(self.root, self.consumer_id, offsets)
            self.registered = dict(offsets)
