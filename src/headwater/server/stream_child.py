"""A stream's worker as a child of `headwater serve`: dies with the service (see
`worker.die_with_parent`), otherwise exactly `python -m headwater.streams.worker`."""

from __future__ import annotations

import sys

from headwater.server.worker import die_with_parent


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "--parent":
        print("usage: --parent PID <headwater.streams.worker arguments>", file=sys.stderr)
        return 2
    die_with_parent(int(argv[1]))
    from headwater.streams.worker import main as stream_main

    return stream_main(argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
