"""The `cachequeue` command line (also `python -m cachequeue`): one subcommand per module.

    cachequeue worker --schema NAME --handlers MODULE:ATTR [--concurrency N] [--lease S]
                      [--poll S] [--heartbeat S] [--shutdown-timeout S] [--kinds a,b]
                      [--name W] [--no-listen]
    cachequeue serve --schema NAME --app MODULE:ATTR [--host H] [--port P]
                     [--workers N --handlers MODULE:ATTR] [--concurrency N] ...
    cachequeue scheduler --schema NAME [--interval S] [--name N] [--once [--clock T]]
    cachequeue verify [--variant NAME] [--seed N] [--jobs N] [--workers N] [--faults a,b]
    cachequeue verify-schedules [--variant real|no-fire-key] [--seed N] [--steps N]

`COMMANDS` is the registry: a later part adds a subcommand (e.g. `serve`) by writing a
module with a `COMMAND` (see `base.Command`) and adding it to the list. Exit status: 0 when
the command stopped cleanly, 1 on an unexpected error, 2 for bad arguments (one line on
stderr, before anything touches the database), 3 when a worker had to hand jobs back.
This part may import the production-shaped parts (`queue`, later the HTTP service), never
`course`.
"""

from __future__ import annotations

import sys

from . import scheduler, serve, verify, verify_schedules, worker
from .base import EXIT_USAGE, Command, Parser, UsageError

__all__ = ["COMMANDS", "build_parser", "main"]

COMMANDS: list[Command] = [worker.COMMAND, serve.COMMAND, scheduler.COMMAND, verify.COMMAND,
                           verify_schedules.COMMAND]


def build_parser() -> Parser:
    parser = Parser(prog="cachequeue",
                    description="Course library: caching, job queues and background work.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=Parser)
    for command in COMMANDS:
        child = sub.add_parser(command.name, help=command.help, description=command.help)
        command.add_arguments(child)
        child.set_defaults(prepare=command.prepare)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line `argv` (default sys.argv[1:]); return the exit status."""
    parser = build_parser()
    args = None
    try:
        args = parser.parse_args(argv)
        run = args.prepare(args)
    except UsageError as exc:
        text = str(exc)
        if args is not None and not text.startswith(parser.prog):
            text = f"{parser.prog} {args.command}: {text}"
        print(f"{text} (see --help)", file=sys.stderr)
        return EXIT_USAGE
    return run()
