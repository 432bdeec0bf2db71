"""DDL from MariaDB's own test suite (Debian's mariadb-test package), as a second corpus.

The .test files are mysqltest scripts, full of real-world and corner-case DDL.  Only
statements that shape tables or databases are taken, in file order (an ALTER needs the CREATE
before it), one script per file; mysqltest commands, variable substitutions and statements
spread over changed delimiters are left out.  The files are not ours to ship: this reads them
where the package installed them, and the test using it runs only when asked to.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

SUITE = Path("/usr/share/mysql/mysql-test")
_LEAD = re.compile(r"^\s*(create|alter|drop|rename|truncate)\b", re.IGNORECASE)
_DDL = re.compile(r"^\s*(create|alter|drop|rename|truncate)\s+(temporary\s+)?(table|tables|"
                  r"database|schema|index|unique|fulltext|spatial|or|online|offline|ignore|"
                  r"if)\b", re.IGNORECASE)
_DELIMITER = re.compile(r"^-*\s*delimiter\s+(\S+)", re.IGNORECASE)


def statements(path: Path) -> list[str]:
    """The table-shaping statements of one .test file, in order."""
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    delimiter = ";"
    out: list[str] = []
    buffer: list[str] = []
    for line in text.split("\n"):
        stripped = line.strip()
        match = _DELIMITER.match(stripped)
        if match and not buffer:
            delimiter = match.group(1).rstrip(";") or ";"
            continue
        if not buffer and (stripped.startswith(("#", "--")) or not _LEAD.match(stripped)):
            continue
        buffer.append(line)
        if stripped.endswith(delimiter):
            statement = "\n".join(buffer).strip()[:-len(delimiter)].strip()
            buffer = []
            if any("\udc80" <= c <= "\udcff" for c in statement) or re.search(
                    r"\$|@@|\beval\b", statement):
                continue  # not UTF-8 (another charset's test), or mysqltest variables
            if _DDL.match(statement):
                out.append(statement)
    return out


def scripts(pattern: str = r"/(main|suite/(versioning|period|parts|innodb))/") -> Iterator[
        tuple[Path, list[str]]]:
    """(file, statements) for every .test file whose path matches `pattern`."""
    selected = re.compile(pattern)
    for path in sorted(SUITE.glob("**/*.test")):
        if selected.search(str(path)):
            found = statements(path)
            if found:
                yield path, found
