"""What every subcommand of `cachequeue` is made of, and the one-line usage error.

A subcommand is a `Command`: a name, a one-line help, a function that declares its
arguments on an argparse parser, and `prepare(args)`, which checks everything it can
WITHOUT touching the database (imports, numbers, names) and returns the function that
runs it. Any bad argument raises `UsageError`; `cachequeue.cli.main` prints it as one line
and exits with status 2, so a typo never reaches the database.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["EXIT_HANDED_BACK", "EXIT_USAGE", "Command", "Parser", "UsageError",
           "import_attribute"]

EXIT_USAGE = 2  # bad arguments: nothing was started
EXIT_HANDED_BACK = 3  # stopped, but some jobs were handed back (or left to lease expiry)


class UsageError(Exception):
    """A bad command line; the message is the whole one-line explanation."""


class Parser(argparse.ArgumentParser):
    """argparse, but an error is a UsageError (one line) instead of usage text and exit."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    prepare: Callable[[argparse.Namespace], Callable[[], int]]


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:199] + "…"


def import_attribute(spec: str, option: str, what: str) -> Any:
    """The object named by "MODULE:ATTR" (the value of `--option`), or a UsageError that
    says in one line what is wrong; `what` names the module's role ("handler", "app")."""
    module_name, colon, attr = spec.partition(":")
    if not colon or not module_name or not attr:
        raise UsageError(f"--{option} must look like MODULE:ATTR, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"cannot import {what} module {module_name!r}: {exc}") from None
    except (Exception, SystemExit) as exc:  # it raised (or exited) while it was imported
        raise UsageError(f"{what} module {module_name!r} failed on import: "
                         f"{type(exc).__name__}: {_one_line(exc)}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise UsageError(f"module {module_name!r} has no attribute {attr!r}") from None
