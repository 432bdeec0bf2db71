"""How the `headwater` command line answers an error: one line on stderr and an exit status,
never a Python traceback for the user's own mistake.

Why at the command group: every command (and the `streams`/`profiles` groups under it) runs
inside `HeadwaterGroup.invoke`, so an expected error a command did not catch itself -- a
configuration problem, a file that is missing or damaged, an optional dependency not
installed, an operation the connector does not support -- is rendered the same way
everywhere instead of each command guessing.  A real bug (any other exception) is also one
line, saying it is one; `headwater --debug ...` re-raises it for the whole traceback.

Exit statuses: 2 for what the user wrote (configuration, options), 1 for the rest (files,
the environment, the operation failing).
"""

from __future__ import annotations

import typer

# typer >= 0.29 carries its own copy of click: its Context and usage error are these.
from typer._click.core import Context
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.core import TyperGroup
from typer.exceptions import TyperException

from headwater.config.loader import ConfigError
from headwater.extras import MissingExtra, extra_of
from headwater.state_format import StateFormatError

DEBUG_PARAM = "debug"


class UserError(Exception):
    """A mistake in what the user asked for: `message` (one line) on stderr, exit `code`."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def config_failure(source: object, exc: Exception) -> str:
    """`configuration error in <file>: <problem>`; several problems one per line under it.
    A problem that already starts with the file's name does not repeat it."""
    problems = exc.problems if isinstance(exc, ConfigError) else (str(exc),)
    where = "" if source is None else f" in {source}"
    if len(problems) == 1:
        only = problems[0]
        if source is not None and only.startswith(str(source)):
            return f"configuration error: {only}"
        return f"configuration error{where}: {only}"
    return (f"configuration error{where}: {len(problems)} problems:\n"
            + "\n".join(f"  - {p}" for p in problems))


def describe(exc: Exception) -> tuple[str, int] | None:
    """The message and exit status of an expected error; None for a bug."""
    if isinstance(exc, UserError):
        return f"error: {exc}", exc.code
    if isinstance(exc, MissingExtra):
        return f"error: {exc}", 1
    if isinstance(exc, StateFormatError):  # state of a newer (or unknown) format
        return f"error: {exc}", 1
    if isinstance(exc, ConfigError):
        return config_failure(exc.source, exc), 2
    if isinstance(exc, ModuleNotFoundError):
        extra = extra_of(exc.name)
        if extra is not None:
            return f"error: {MissingExtra(extra, exc.name or '?', 'this command')}", 1
        return None
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"error: {exc.filename}: {exc.strerror or exc}", 1
    return None


class HeadwaterGroup(TyperGroup):
    """The top-level group: expected errors as one line (see the module docstring)."""

    def invoke(self, ctx: Context) -> object:
        try:
            return super().invoke(ctx)
        except UsageError as exc:
            if isinstance(exc, NoArgsIsHelpError):
                raise  # the help text, as asked
            # A wrong option or argument of a command: one line naming it and the command,
            # rather than the usage and a framed box.
            where = exc.ctx.command_path if exc.ctx is not None else ctx.command_path
            typer.echo(f"error: {where}: {exc.format_message()} (see {where} --help)",
                       err=True)
            ctx.exit(exc.exit_code)
        except (typer.Exit, typer.Abort, TyperException):
            raise
        except Exception as exc:
            if ctx.params.get(DEBUG_PARAM):
                raise
            known = describe(exc)
            if known is None:
                message = (f"internal error: {type(exc).__name__}: {exc} (a bug in headwater; "
                           "`headwater --debug ...` shows the traceback)")
                code = 1
            else:
                message, code = known
            typer.echo(" ".join(message.split("\n")) if known is None else message, err=True)
            ctx.exit(code)
