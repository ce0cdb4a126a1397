"""Where the database comes from, and one schema per chapter.

`DATABASE_URL` always wins (any PostgreSQL 15+). Without it the course uses the embedded
PostgreSQL 18 server of `cachequeue.embedded`, which only the set-up paths start
(`database_url(start=True)`: `make db`, the test session, ...); clients never do.

Connections are in autocommit mode: a statement commits on its own, and a function that
needs several statements to commit together opens `with conn.transaction():`. That way no
transaction stays open by accident while Python does slow work.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from . import embedded, sqlfile
from .checks import check_bool, check_instance, check_text
from .errors import ConfigurationError, DatabaseUnavailable

__all__ = [
    "connect",
    "database_url",
    "describe",
    "drop_schema",
    "reset_schema",
    "schema_name",
    "server_version",
    "set_clock",
]

_QUERIES = sqlfile.load("cachequeue", "db.sql")
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def database_url(*, start: bool = False) -> str:
    """DATABASE_URL if set (checked for form), else the shared embedded server's URL.

    The embedded server is never started here unless `start` is True, which only the
    set-up paths pass (`make db`, the test session, `make serve`, the notebook runner,
    scripts): a client that finds it stopped gets DatabaseUnavailable, which says to run
    `make db`, and the server stays down until someone does (an operator's `pg_ctl stop`
    holds; a worker retries with backoff instead of blocking in a start).
    """
    check_bool(start, "start")
    url = os.environ.get("DATABASE_URL", "").strip()
    if not url:
        if start:
            return _start_embedded()
        if found := embedded.running_url():
            return found
        raise DatabaseUnavailable(
            f"the embedded PostgreSQL is not running (data folder {embedded.data_dir()}): "
            "run `make db` to start it, or set DATABASE_URL to use another server"
        )
    scheme = url.split("://", 1)[0] if "://" in url else None
    if scheme is not None and scheme not in ("postgresql", "postgres"):
        raise ConfigurationError(
            f"DATABASE_URL must start with postgresql:// (got {scheme}://). "
            "Unset it to use the embedded server."
        )
    try:
        conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise ConfigurationError(
            f"DATABASE_URL is malformed ({str(exc).strip()}). Expected a form like "
            "postgresql://user@host:5432/dbname, or unset it to use the embedded server."
        ) from None
    return url


def _start_embedded() -> str:
    try:
        return embedded.start()
    except Exception as exc:  # the wheel raises several kinds; one clear message is enough
        reason = " ".join(str(exc).split())
        raise DatabaseUnavailable(
            f"could not start the embedded PostgreSQL in {embedded.data_dir()}: {reason}. "
            "Its log is the file `log` in that folder; `make db-stop` then `make db` "
            "restarts it, or set DATABASE_URL to use another server."
        ) from None


def schema_name(name: str) -> str:
    """The schema a chapter name maps to: `name` plus $CACHEQUEUE_SCHEMA_SUFFIX, if set.

    The suffix lets a second copy of a chapter (the student copy under test) run at the same
    time as the first without the two resetting each other's tables. Unset, names are as given.
    """
    check_instance(name, "schema name", str)
    if not _SCHEMA_NAME.match(name) or name.startswith("pg_"):
        raise ValueError(
            f"schema name must be lower-case letters, digits and _ (at most 63), got {name!r}"
        )
    full = name + os.environ.get("CACHEQUEUE_SCHEMA_SUFFIX", "")
    if not _SCHEMA_NAME.match(full):
        raise ValueError(f"CACHEQUEUE_SCHEMA_SUFFIX makes an invalid schema name: {full!r}")
    return full


def connect(schema: str | None = None, *, url: str | None = None,
            **kwargs: Any) -> psycopg.Connection:
    """Open an autocommit connection; with `schema`, its search_path is that schema only.

    `url` picks another server than database_url() (a private one of
    `embedded.Server.private()`). Never starts a server: a stopped embedded server is
    DatabaseUnavailable (run `make db`). Extra keyword arguments go to `psycopg.connect`
    (for example `row_factory`).
    """
    given = url is not None
    url = database_url() if url is None else url
    # UTC everywhere: timestamps print the same on every server and laptop.
    options = "-c TimeZone=UTC"
    if schema is not None:
        options += f" -c search_path={schema_name(schema)}"
    kwargs["options"] = options
    kwargs.setdefault("autocommit", True)
    kwargs.setdefault("connect_timeout", 10)
    try:
        return psycopg.connect(url, **kwargs)
    except psycopg.OperationalError as exc:
        reason = " ".join(str(exc).split())
        if given:
            where, advice = "the given URL", "Check that the server is running"
        elif os.environ.get("DATABASE_URL", "").strip():
            where, advice = "DATABASE_URL", ("Check that the server is running and the URL is "
                                             "right, or unset DATABASE_URL to use the embedded server")
        else:
            where, advice = "the embedded server", "Run `make db` to start it, or set DATABASE_URL"
        raise DatabaseUnavailable(
            f"cannot connect to PostgreSQL ({where}): {reason}. {advice}."
        ) from None


def reset_schema(conn: psycopg.Connection, name: str,
                 *installs: Callable[[psycopg.Connection], Any]) -> None:
    """Drop schema `name` if it exists, recreate it with the database clock (`sql/clock.sql`),
    run each `install(conn)` in order, and point the connection's search_path at it.

    The parts bring their own installs (`queue.install`, `shared.fencing.install`, ...); the
    course composes a chapter's schema from them (`cachequeue.course.chapter.reset`). It all
    happens in one transaction: a failing install leaves the old schema as it was.
    """
    name = schema_name(name)
    ident = sql.Identifier(name)
    with conn.transaction():
        conn.execute(_QUERIES["lock_schema"].sql, {"schema": name})
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(ident))
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(ident))
        conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(ident))
        conn.execute(sqlfile.read("cachequeue", "clock.sql"))
        for install in installs:
            install(conn)
    conn.execute(sql.SQL("SET search_path TO {}").format(ident))


def drop_schema(conn: psycopg.Connection, name: str) -> None:
    """Drop schema `name` (with the suffix of schema_name) and everything in it, if it exists."""
    conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema_name(name))))


def set_clock(conn: psycopg.Connection, instant: Any | None) -> None:
    """Freeze this session's database clock (`cq_now()`) at `instant`, or release it with None."""
    conn.execute(_QUERIES["set_clock"].sql, {"instant": "" if instant is None else str(instant)})


def server_version(conn: psycopg.Connection, *, short: bool = False) -> str:
    """The server's version string, e.g. 'PostgreSQL 18.1 on x86_64-pc-linux-gnu ...', or
    with `short` only the number, e.g. '18.1'."""
    name = "server_version_number" if short else "server_version"
    return conn.execute(_QUERIES[name].sql).fetchone()[0]


def describe(url: str) -> str:
    """One line naming the server at `url` (connects once), e.g.
    'PostgreSQL 18.6 (embedded, .pgdata/data)' or 'PostgreSQL 15.8 (DATABASE_URL)'."""
    with connect(url=check_text(url, "url", limit=2000)) as conn:
        version = server_version(conn, short=True)
    return f"PostgreSQL {version} ({embedded.source()})"


def _main() -> int:
    """`python -m cachequeue.db` (`make db`): a set-up step. Start the embedded server unless
    DATABASE_URL is set, connect once and say which server the course will use."""
    import sys

    try:
        print(f"database: {describe(database_url(start=True))}")
    except (ConfigurationError, DatabaseUnavailable) as exc:
        print(f"database: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
