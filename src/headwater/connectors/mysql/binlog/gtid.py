"""GTIDs as values: MariaDB's `domain-server-seq` positions and MySQL's `uuid:intervals` sets.

They are what offsets store and what a restart resumes from, so they are immutable,
comparable and round-trip through their text form exactly as the servers print it.

MariaDB: a GTID is ``domain-server-seq``; a *position* (``@@gtid_binlog_pos``,
``@slave_connect_state``) holds the last GTID per replication domain, e.g. ``0-1-10,1-2-5``.
Within a domain sequence numbers increase, so "already seen" is a comparison of seq numbers.

MySQL: a GTID is ``uuid:n``; a GTID *set* (``@@gtid_executed``) holds, per source uuid, the
intervals of transaction numbers executed, e.g. ``uuid:1-5:7-9,uuid2:1-3``.  Debezium's
``gtid.source.includes`` / ``gtid.source.excludes`` (comma-separated regular expressions
over the source uuids) filter which uuids a stored set keeps (`GtidSet.filter`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["GtidError", "GtidSet", "MariaGtidPosition", "MariadbGtid", "source_filter"]


class GtidError(ValueError):
    """A GTID or GTID set/position that does not parse."""


# ---- MariaDB -------------------------------------------------------------------------------


class MariadbGtid(NamedTuple):
    domain_id: int
    server_id: int
    seq_no: int

    @classmethod
    def parse(cls, text: str) -> MariadbGtid:
        parts = text.strip().split("-")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise GtidError(f"not a MariaDB GTID (domain-server-seq): {text!r}")
        return cls(int(parts[0]), int(parts[1]), int(parts[2]))

    def __str__(self) -> str:
        return f"{self.domain_id}-{self.server_id}-{self.seq_no}"


@dataclass(frozen=True, slots=True)
class MariaGtidPosition:
    """The last GTID per domain, as in ``@@gtid_binlog_pos`` or ``@slave_connect_state``."""

    gtids: tuple[MariadbGtid, ...] = ()  # one per domain, sorted by domain

    @classmethod
    def parse(cls, text: str) -> MariaGtidPosition:
        by_domain: dict[int, MariadbGtid] = {}
        for part in text.split(","):
            if not part.strip():
                continue
            gtid = MariadbGtid.parse(part)
            if gtid.domain_id in by_domain:
                raise GtidError(f"GTID position names domain {gtid.domain_id} twice: {text!r}")
            by_domain[gtid.domain_id] = gtid
        return cls(tuple(by_domain[d] for d in sorted(by_domain)))

    def __str__(self) -> str:
        return ",".join(str(g) for g in self.gtids)

    def get(self, domain_id: int) -> MariadbGtid | None:
        for g in self.gtids:
            if g.domain_id == domain_id:
                return g
        return None

    def advance(self, gtid: MariadbGtid | str) -> MariaGtidPosition:
        """The position after `gtid`: it replaces its domain's entry."""
        if isinstance(gtid, str):
            gtid = MariadbGtid.parse(gtid)
        others = [g for g in self.gtids if g.domain_id != gtid.domain_id]
        return MariaGtidPosition(tuple(sorted([*others, gtid])))

    def contains(self, gtid: MariadbGtid | str) -> bool:
        """Whether `gtid` is at or before this position (already seen) in its domain."""
        if isinstance(gtid, str):
            gtid = MariadbGtid.parse(gtid)
        mine = self.get(gtid.domain_id)
        return mine is not None and gtid.seq_no <= mine.seq_no

    def __le__(self, other: MariaGtidPosition) -> bool:
        """Every domain of self is at or before the same domain in `other`."""
        return all(other.contains(g) for g in self.gtids)

    def __ge__(self, other: MariaGtidPosition) -> bool:
        return other <= self


# ---- MySQL ---------------------------------------------------------------------------------

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _merge(intervals: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1] + 1:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class GtidSet:
    """A MySQL GTID set: per source uuid (lower case), merged inclusive intervals."""

    sets: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = ()  # sorted by uuid

    @classmethod
    def parse(cls, text: str) -> GtidSet:
        by_uuid: dict[str, list[tuple[int, int]]] = {}
        for raw in text.replace("\n", "").split(","):
            part = raw.strip()
            if not part:
                continue
            uuid, *ranges = part.split(":")
            uuid = uuid.strip().lower()
            if not _UUID.match(uuid) or not ranges:
                raise GtidError(f"not a GTID set entry (uuid:n[-m]...): {part!r}")
            for r in ranges:
                lo, sep, hi = r.strip().partition("-")
                try:
                    start, end = int(lo), int(hi) if sep else int(lo)
                except ValueError:
                    raise GtidError(f"bad interval {r!r} in GTID set {text!r}") from None
                if start < 1 or end < start:
                    raise GtidError(f"bad interval {r!r} in GTID set {text!r}")
                by_uuid.setdefault(uuid, []).append((start, end))
        return cls._of(by_uuid)

    @classmethod
    def _of(cls, by_uuid: dict[str, list[tuple[int, int]]]) -> GtidSet:
        return cls(tuple((u, _merge(iv)) for u, iv in sorted(by_uuid.items()) if iv))

    def __str__(self) -> str:
        return ",".join(
            u + "".join(f":{a}" if a == b else f":{a}-{b}" for a, b in iv) for u, iv in self.sets)

    def __iter__(self) -> Iterator[tuple[str, tuple[tuple[int, int], ...]]]:
        return iter(self.sets)

    def _dict(self) -> dict[str, list[tuple[int, int]]]:
        return {u: list(iv) for u, iv in self.sets}

    def add(self, uuid: str, gno: int) -> GtidSet:
        """The set with transaction `uuid:gno` added."""
        d = self._dict()
        d.setdefault(uuid.lower(), []).append((gno, gno))
        return GtidSet._of(d)

    def union(self, other: GtidSet) -> GtidSet:
        d = self._dict()
        for u, iv in other.sets:
            d.setdefault(u, []).extend(iv)
        return GtidSet._of(d)

    def contains(self, uuid: str, gno: int) -> bool:
        uuid = uuid.lower()
        for u, iv in self.sets:
            if u == uuid:
                return any(a <= gno <= b for a, b in iv)
        return False

    def is_subset_of(self, other: GtidSet) -> bool:
        theirs = dict(other.sets)
        for u, iv in self.sets:
            for a, b in iv:
                if not any(x <= a and b <= y for x, y in theirs.get(u, ())):
                    return False
        return True

    def filter(self, includes: str | None = None, excludes: str | None = None) -> GtidSet:
        """Keeps the uuids `source_filter(includes, excludes)` accepts."""
        keep = source_filter(includes, excludes)
        return GtidSet(tuple((u, iv) for u, iv in self.sets if keep(u)))


def source_filter(includes: str | None, excludes: str | None) -> _UuidFilter:
    """Debezium's gtid.source.includes/excludes: comma-separated regexes, full match, case
    insensitive.  Includes wins when both are given (Debezium rejects that configuration)."""
    if includes:
        pats = [re.compile(p.strip(), re.IGNORECASE) for p in includes.split(",") if p.strip()]
        return _UuidFilter(pats, True)
    if excludes:
        pats = [re.compile(p.strip(), re.IGNORECASE) for p in excludes.split(",") if p.strip()]
        return _UuidFilter(pats, False)
    return _UuidFilter([], False)


class _UuidFilter:
    def __init__(self, patterns: list[re.Pattern[str]], include: bool) -> None:
        self.patterns = patterns
        self.include = include

    def __call__(self, uuid: str) -> bool:
        hit = any(p.fullmatch(uuid) for p in self.patterns)
        return hit if self.include else not hit
