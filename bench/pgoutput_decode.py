"""Micro-benchmark for the pgoutput decoder: messages decoded per second on one core.

    PYTHONPATH=src python bench/pgoutput_decode.py [--number 100000] [--rounds 7]

Prints the best and median rate over the rounds (the best is the least disturbed by other load).

Messages are hand-built to match what pgoutput sends (see tests/fixtures/pgoutput for captured
ones): an Insert of a 4-column text row (integer, varchar, numeric, text), Updates without and
with a key change ('K' old tuple) and a Begin/Commit pair.
"""

from __future__ import annotations

import argparse
import statistics
import struct
import time
from collections.abc import Callable

from headwater.connectors.postgres.pgoutput import decode


def _text(value: str) -> bytes:
    raw = value.encode()
    return b"t" + struct.pack("!I", len(raw)) + raw


def _row(*values: str | None) -> bytes:
    cols = b"".join(b"n" if v is None else _text(v) for v in values)
    return struct.pack("!H", len(values)) + cols


ROW = _row("12345", "Ada Lovelace", "1234.56", "analytical engine notes")
INSERT = b"I" + struct.pack("!I", 16487) + b"N" + ROW
UPDATE_K = b"U" + struct.pack("!I", 16487) + b"K" + _row("12344", None, None, None) + b"N" + ROW
UPDATE_N = b"U" + struct.pack("!I", 16487) + b"N" + ROW
BEGIN = b"B" + struct.pack("!QqI", 0x224A370, 847_000_000_000_000, 761)
COMMIT = b"C" + struct.pack("!BQQq", 0, 0x224A370, 0x224A3A0, 847_000_000_000_000)


def _rate(fn: Callable[[bytes], object], msg: bytes, number: int) -> float:
    loop = range(number)
    start = time.perf_counter()
    for _ in loop:
        fn(msg)
    return number / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description="pgoutput decode throughput")
    parser.add_argument("--number", type=int, default=100_000, help="decodes per round")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per message kind")
    args = parser.parse_args()
    print(f"{'message':<26} {'size':>5}  {'best msg/s':>12}  {'median msg/s':>12}  {'best ns':>7}")
    for label, msg in (
        ("Insert, 4 text columns", INSERT),
        ("Update, no old tuple", UPDATE_N),
        ("Update with 'K' old key", UPDATE_K),
        ("Begin", BEGIN),
        ("Commit", COMMIT),
    ):
        rates = [_rate(decode, msg, args.number) for _ in range(args.rounds)]
        best, median = max(rates), statistics.median(rates)
        print(f"{label:<26} {len(msg):>5}  {best:>12,.0f}  {median:>12,.0f}  {1e9 / best:>7,.0f}")


if __name__ == "__main__":
    main()
