"""The one error every reader of the topic log raises when a segment is not what the writer wrote.

A record missing from a topic must never go unnoticed: downstream it is a row missing from a
Delta table.  So readers (`headwater.topics.reader`, the pipeline's `source.read_range` and the
column-wise scan) stop at the first place that breaks the format - a gap in the offsets, a line
that is not a record, a sealed segment whose last line is cut short - and raise
`TopicLogDamaged` naming the topic, the segment file, the offset of the first record that is
missing or unreadable there, and the byte position in the file.  The CLI prints its message
and exits 1; `headwater topics verify` lists every such place and `--repair` cuts the topic
back to the record before it.
"""

from __future__ import annotations

from pathlib import Path

from headwater.topics.segment import CorruptSegmentError

__all__ = ["TopicLogDamaged", "missing_records"]


class TopicLogDamaged(CorruptSegmentError):
    """A topic log segment that breaks the format at one place.

    `offset` is the offset of the first record that is missing or unreadable at that place (the
    offset the record there should have had), `position` the byte position in `segment` where
    the problem starts, `problem` what is wrong there.
    """

    def __init__(self, topic: str, segment: Path, offset: int, position: int,
                 problem: str) -> None:
        self.topic = topic
        self.segment = Path(segment)
        self.offset = offset
        self.position = position
        self.problem = problem
        super().__init__(
            f"topic log damaged: topic {topic}, segment {self.segment}, offset {offset}, "
            f"byte {position}: {problem} (run `headwater topics verify` to list every damaged "
            "place, `--repair` to cut the topic back to its last good record)"
        )

    def __reduce__(self) -> tuple[type[TopicLogDamaged], tuple[str, Path, int, int, str]]:
        # Spark ships exceptions between Python processes by pickling them.
        return (type(self), (self.topic, self.segment, self.offset, self.position, self.problem))


def missing_records(expected: int, found: int) -> str:
    """The problem text of a record with offset `found` where `expected` was due."""
    if found > expected:
        which = (f"records {expected}..{found - 1} are" if found - 1 > expected
                 else f"record {expected} is")
        return f"offset {found} where {expected} was expected: {which} missing"
    return f"offset {found} where {expected} was expected: offsets repeat or go backwards"
