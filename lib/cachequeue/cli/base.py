"""What every subcommand of `cachequeue` is made of, and the one-line usage error.

A subcommand is a `Command`: a name, a one-line help, a function that declares its
arguments on an argparse parser, and `prepare(args)`, which checks everything it can
WITHOUT touching the database (imports, numbers, names) and returns the function that
runs it. Any bad argument raises `UsageError`; `cachequeue.cli.main` prints it as one line
and exits with status 2, so a typo never reaches the database.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["EXIT_HANDED_BACK", "EXIT_USAGE", "Command", "Parser", "UsageError"]

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
