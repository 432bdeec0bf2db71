"""Secret values and ``${env:...}`` / ``${file:...}`` references in configuration.

Why this module exists: connector configurations carry credentials (``database.password``,
``database.sslpassword``, Kafka-style ``*.password`` pass-through keys).  Those values must be
usable by the code that opens connections but must never end up in a log line, an exception
message, a ``repr()`` or a printed configuration.  Wrapping them in :class:`Secret` makes
"leaking by accident" impossible: the only way to get the text back is an explicit
:meth:`Secret.reveal`.

References follow Kafka's ConfigProvider syntax so that files written for Kafka Connect /
Debezium keep working:

* ``${env:VAR_NAME}`` - the value of an environment variable (used verbatim);
* ``${file:/path/to/file}`` - the whole content of a file, trailing newline characters stripped
  (the common "docker/kubernetes secret mounted as a file" case);
* ``${file:/path/to/file.properties:key}`` - Kafka's ``FileConfigProvider`` form: the value of
  ``key`` in a Java properties file.

Relative file paths are resolved against the directory of the configuration file.  Errors name
the environment variable or the path, never the (partial) secret value.
"""

from __future__ import annotations

import hmac
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from headwater.config.loader import parse_properties

__all__ = [
    "REDACTED",
    "Secret",
    "SecretReferenceError",
    "has_reference",
    "is_sensitive_key",
    "resolve_references",
]

REDACTED: Final = "********"

# ${env:NAME} or ${file:...}; the body stops at the first closing brace.
_REFERENCE: Final = re.compile(r"\$\{(env|file):([^}]*)\}")

# Pass-through keys whose values are treated as secrets when a configuration is printed.
_SENSITIVE_KEY: Final = re.compile(
    r"(password|passwd|secret|token|credential|jaas\.config|api\.?key|private\.?key|"
    r"access\.?key|auth\.user\.info)",
    re.IGNORECASE,
)


class SecretReferenceError(ValueError):
    """A ``${env:...}`` / ``${file:...}`` reference could not be resolved.

    The message names the variable or the path, never a value.
    """


class Secret:
    """A string that must not be printed.

    ``str()``, ``repr()`` and ``format()`` all give ``'********'``; use :meth:`reveal` where the
    real value is needed (e.g. when building the libpq connection parameters).
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """Return the secret text.  Call this only where the value is actually used."""
        return self._value

    def __repr__(self) -> str:
        return REDACTED

    def __str__(self) -> str:
        return REDACTED

    def __format__(self, format_spec: str) -> str:
        return format(REDACTED, format_spec)

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __reduce__(self) -> tuple[type[Secret], tuple[str]]:
        # Keep pickling/copying working (frozen dataclasses get deep-copied by asdict()).
        return (Secret, (self._value,))


def is_sensitive_key(key: str) -> bool:
    """Heuristic: pass-through keys (``...password``, ``...secret`` ...) hidden when printing."""
    return _SENSITIVE_KEY.search(key) is not None


def without_secrets(raw: Mapping[str, str], is_secret: Callable[[str], bool]) -> dict[str, str]:
    """`raw` without its secrets: the keys `is_secret` names (a definition's password-typed
    properties) and the sensitive pass-through keys.  For commands that never connect, so
    that a secret they do not use need not be set or resolvable."""
    return {k: v for k, v in raw.items() if not (is_secret(k) or is_sensitive_key(k))}


def has_reference(value: str) -> bool:
    """True if ``value`` contains at least one ``${env:...}`` or ``${file:...}`` reference."""
    return _REFERENCE.search(value) is not None


def resolve_references(
    value: str,
    *,
    env: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
) -> str:
    """Replace every ``${env:...}`` / ``${file:...}`` reference in ``value``.

    Raises :class:`SecretReferenceError` naming the variable / path that could not be resolved.
    Text outside references is kept as is; ``value`` without references is returned unchanged.
    """
    environ: Mapping[str, str] = os.environ if env is None else env

    def substitute(match: re.Match[str]) -> str:
        provider, body = match.group(1), match.group(2)
        if provider == "env":
            # Kafka's EnvVarConfigProvider also accepts an empty path: ${env::NAME}.
            name = body[1:] if body.startswith(":") else body
            if not name:
                raise SecretReferenceError("empty environment variable name in ${env:}")
            if name not in environ:
                raise SecretReferenceError(f"environment variable '{name}' is not set")
            return environ[name]
        return _read_file_reference(body, base_dir)

    return _REFERENCE.sub(substitute, value)


def _resolve_path(raw: str, base_dir: Path | None) -> Path:
    path = Path(raw).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return path


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SecretReferenceError(f"file '{path}' is not valid UTF-8") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise SecretReferenceError(f"cannot read file '{path}' ({reason})") from None


def _read_file_reference(body: str, base_dir: Path | None) -> str:
    if not body:
        raise SecretReferenceError("empty path in ${file:}")
    whole = _resolve_path(body, base_dir)
    if whole.is_file() or ":" not in body:
        # ${file:/path}: the whole file, without the trailing newline(s) editors add.
        return _read_text(whole).rstrip("\r\n")
    # ${file:/path/to/file.properties:key} (Kafka FileConfigProvider form).
    raw_path, _, key = body.rpartition(":")
    path = _resolve_path(raw_path, base_dir)
    if not path.is_file():
        raise SecretReferenceError(f"cannot read file '{whole}' (No such file or directory)")
    try:
        entries = parse_properties(_read_text(path), source=str(path))
    except ValueError:
        # The parse error message could quote file content: keep it out.
        raise SecretReferenceError(f"file '{path}' is not a valid properties file") from None
    if key not in entries:
        raise SecretReferenceError(f"key '{key}' not found in properties file '{path}'")
    return entries[key]
