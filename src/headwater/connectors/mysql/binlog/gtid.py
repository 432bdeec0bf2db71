"""GTIDs as values: MariaDB's `domain-server-seq` positions and MySQL's `uuid:intervals` sets.

They are what offsets store and what a restart resumes from, so they are immutable,
comparable and round-trip through their text form exactly as the servers print it.

MariaDB: a GTID is ``domain-server-seq``; a *position* (``@@gtid_binlog_pos``,
``@slave_connect_state``) holds the last GTID per replication domain, e.g. ``0-1-10,1-2-5``.
Within a domain sequence numbers increase, so "already seen" is a comparison of seq numbers.

MySQL: a GTID is ``uuid:n``; a GTID *set* (``@@gtid_executed``) holds, per source uuid, the
intervals of transaction numbers executed, e.g. ``uuid:1-5:7-9,uuid2:1-3``.  Debezium's
``gtid.source.includes`` / ``gtid.source.excludes`` (comma-separated regular expressions
over the source uuids) filter which uuids a stored set keeps (`GtidSet.retain`).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Final, NamedTuple

__all__ = ["MARIADB_GTID", "MYSQL_GTID", "GtidError", "GtidSet", "GtidSetError",
           "MariaGtidPosition", "MariadbGtid"]


class GtidError(ValueError):
    """A GTID or GTID set/position that does not parse."""


_U64: Final = struct.Struct("<Q")


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

# One MySQL GTID set entry, `uuid:interval[:interval...]` (what Datastream's gtidSet and
# @@gtid_executed hold); MariaDB's `domain-server-seq` for telling the two apart.
MARIADB_GTID: Final = re.compile(r"(\d+)-(\d+)-(\d+)")
MYSQL_GTID: Final = re.compile(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"
                               r"(:\d+(-\d+)?)+")
_INTERVAL: Final = re.compile(r"(\d+)(?:-(\d+))?")
_GNO_MAX: Final = 2**63 - 1  # MySQL's GNO_END - 1: transaction numbers are signed 64-bit


class GtidSetError(GtidError):
    """Not a GTID set; the message says which part."""


def _merge(intervals: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1] + 1:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return tuple(out)


def _with_gno(intervals: tuple[tuple[int, int], ...], gno: int) -> tuple[tuple[int, int], ...]:
    """`intervals` with transaction `gno`; the usual case, the next number of the last
    interval, without a sort (it runs at every commit)."""
    if intervals:
        first, last = intervals[-1]
        if gno == last + 1:
            return (*intervals[:-1], (first, gno))
        if first <= gno <= last:
            return intervals
    return _merge((*intervals, (gno, gno)))


@dataclass(frozen=True, slots=True)
class GtidSet:
    """A MySQL GTID set: per source uuid (lower case), merged inclusive intervals.

    What a MySQL offset's `gtids` holds (the server's executed set at the snapshot plus every
    transaction committed since, as Debezium's MySqlGtidSet), and what a stream starts from
    (COM_BINLOG_DUMP_GTID sends `encoded()`); its text is MySQL's and Debezium's: uuids in
    order, intervals `a-b` or `a`."""

    sets: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = ()  # sorted by uuid

    @classmethod
    def parse(cls, text: str) -> GtidSet:
        """`uuid:1-5:7-9,uuid2:1-3` (newlines and spaces around parts ignored, as
        @@gtid_executed prints them; a uuid given twice is merged, as MySQL does)."""
        by_uuid: dict[str, list[tuple[int, int]]] = {}
        for raw in text.replace("\n", "").split(","):
            part = raw.strip()
            if not part:
                continue
            if not MYSQL_GTID.fullmatch(part):
                raise GtidSetError(f"'{part}' is not a MySQL GTID set entry (uuid:interval"
                                   "[:interval...], an interval n or n-m, e.g. "
                                   "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7)")
            uuid, *ranges = part.split(":")
            for interval in ranges:
                match = _INTERVAL.fullmatch(interval)
                assert match is not None
                start = int(match.group(1))
                end = int(match.group(2)) if match.group(2) else start
                if not 1 <= start <= end <= _GNO_MAX:
                    raise GtidSetError(f"'{part}': interval {interval} is not n or n-m with "
                                       f"1 <= n <= m <= {_GNO_MAX}")
                by_uuid.setdefault(uuid.lower(), []).append((start, end))
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
        """The set with transaction `uuid:gno` added (merged into its uuid's intervals)."""
        uuid = uuid.lower()
        sets = self.sets
        for index, (u, iv) in enumerate(sets):
            if u == uuid:
                return GtidSet((*sets[:index], (u, _with_gno(iv, gno)), *sets[index + 1:]))
        return GtidSet(tuple(sorted((*sets, (uuid, ((gno, gno),))))))

    def add_gtid(self, gtid: str) -> GtidSet:
        """`add` of a GTID's text, `uuid:n` (a MySQL GTID event's)."""
        uuid, _, gno = gtid.rpartition(":")
        return self.add(uuid, int(gno))

    def union(self, other: GtidSet) -> GtidSet:
        d = self._dict()
        for u, iv in other.sets:
            d.setdefault(u, []).extend(iv)
        return GtidSet._of(d)

    def overridden_by(self, other: GtidSet) -> GtidSet:
        """Per uuid, `other`'s intervals where it has the uuid, else this set's (Debezium's
        GtidSet.with: the start set is the server's purged set overridden by the offset's)."""
        d = self._dict()
        d.update(other._dict())
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

    def retain(self, keep: Callable[[str], bool]) -> GtidSet:
        """The uuids `keep` accepts (gtid.source.includes/excludes: the connector's
        `gtid_source_filter`, whole-uuid case-insensitive patterns)."""
        return GtidSet(tuple((u, iv) for u, iv in self.sets if keep(u)))

    def encoded(self) -> bytes:
        """MySQL's binary form of the set (Gtid_set::encode, untagged): n_sids u64, then per
        uuid its 16 bytes, n_intervals u64 and each interval as start u64 and end + 1 u64
        (half-open), all little-endian; COM_BINLOG_DUMP_GTID's SID block."""
        out = bytearray(_U64.pack(len(self.sets)))
        for uuid, intervals in self.sets:
            out += bytes.fromhex(uuid.replace("-", ""))
            out += _U64.pack(len(intervals))
            for start, end in intervals:
                out += _U64.pack(start) + _U64.pack(end + 1)
        return bytes(out)
