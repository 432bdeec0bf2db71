"""The connectors' `?` placeholders in the parameter style of the DB-API driver they run on.

Why: the statements are kept as Debezium's (JDBC `?` placeholders), so that what a live server
is sent reads like the Java connector's SQL; but DB-API drivers differ.  ibm_db_dbi takes
`qmark` (`?`) as is; pymssql takes `pyformat`, where a placeholder is `%s` and the whole
statement goes through Python's `%` formatting, so every literal `%` (in a string literal,
in `LIKE 'a%'`, in a bracketed name) must be doubled.  A `?` inside a string literal or a
quoted name (`'...'`, `"..."`, `[...]`) is text, not a placeholder.
"""

from __future__ import annotations

from typing import Any

_CLOSERS = {"'": "'", '"': '"', "[": "]"}


def to_paramstyle(sql: str, paramstyle: str) -> str:
    """`sql` with its `?` placeholders in `paramstyle` (`qmark`, `format` or `pyformat`)."""
    if paramstyle == "qmark":
        return sql
    if paramstyle not in ("format", "pyformat"):
        raise ValueError(f"DB-API paramstyle {paramstyle!r} is not supported (qmark, format, "
                         "pyformat)")
    text = blank_quoted(sql)
    return "".join("%%" if char == "%" else "%s" if char == "?" and text[i] == "?" else char
                   for i, char in enumerate(sql))


def blank_quoted(sql: str) -> str:
    """`sql` with the text inside '...', "..." and [...] blanked (same length); a doubled
    closing character (`''`, `]]`) stays inside."""
    out: list[str] = []
    closer: str | None = None
    i = 0
    while i < len(sql):
        char = sql[i]
        if closer is None:
            if char in _CLOSERS:
                closer = _CLOSERS[char]
            out.append(char)
        elif char == closer and sql[i + 1:i + 2] == closer:
            out.append("  ")
            i += 1
        else:
            if char == closer:
                closer = None
            out.append(" ")
        i += 1
    return "".join(out)


class _Cursor:
    """A driver cursor whose `execute` takes `?` placeholders."""

    def __init__(self, inner: Any, paramstyle: str) -> None:
        self._inner = inner
        self._paramstyle = paramstyle

    def execute(self, operation: str, params: Any = None) -> Any:
        if params is None:  # no formatting at all: the statement goes as written
            return self._inner.execute(operation)
        return self._inner.execute(to_paramstyle(operation, self._paramstyle), params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __iter__(self) -> Any:
        return iter(self._inner)


class QmarkConnection:
    """A driver connection whose cursors take `?` placeholders whatever the driver's style."""

    def __init__(self, inner: Any, paramstyle: str) -> None:
        self._inner = inner
        self._paramstyle = paramstyle

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        cursor = self._inner.cursor(*args, **kwargs)
        return cursor if self._paramstyle == "qmark" else _Cursor(cursor, self._paramstyle)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("_inner", "_paramstyle"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._inner, name, value)


def connect_qmark(driver: Any, **kwargs: Any) -> Any:
    """`driver.connect(**kwargs)`, seen through `?` placeholders (`driver.paramstyle`)."""
    paramstyle = str(getattr(driver, "paramstyle", "qmark"))
    to_paramstyle("", paramstyle)  # an unsupported style fails here, before any statement
    connection = driver.connect(**kwargs)
    return connection if paramstyle == "qmark" else QmarkConnection(connection, paramstyle)
