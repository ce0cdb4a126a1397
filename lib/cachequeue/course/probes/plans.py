"""The claim's cost made visible: bulk rows, EXPLAIN, and the scans a plan uses.

`fill_finished(conn, 100_000)` gives the jobs table the history a busy queue leaves behind;
`explain(conn, jobs.query("claim").sql, params)` shows how PostgreSQL would run a statement
(with `analyze=True` it runs it too, inside a transaction that is always rolled back, so the
data stays as it was); `scans(plan)` lists how each table is read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import psycopg
from psycopg import sql

from ... import sqlfile
from ...checks import check_bool, check_choice, check_int

__all__ = ["analyze", "explain", "fill_finished", "fill_pending", "indexes", "nodes", "scans", "table_pages",
           "seq_scans", "table_size"]

_QUERIES = sqlfile.load(__package__, "plans.sql")
FORMATS = ("text", "json")


class _Rollback(Exception):
    """Carries EXPLAIN ANALYZE's rows out of the transaction it rolls back."""


def fill_finished(conn: psycopg.Connection, count: int, *, tenants: int = 10) -> int:
    """Insert `count` done no-op jobs over `tenants` tenants (one statement); returns count."""
    params = {"count": check_int(count, "count", minimum=0),
              "tenants": check_int(tenants, "tenants", minimum=1)}
    conn.execute(_QUERIES["fill_finished"].sql, params)
    return count


def fill_pending(conn: psycopg.Connection, count: int, *, tenant_id: int = 1,
                 tenants: int = 1) -> int:
    """Insert `count` pending no-op jobs, due now, of `tenant_id` (with `tenants` > 1: dealt
    round-robin to tenants tenant_id, tenant_id + 1, ...); returns count."""
    params = {"count": check_int(count, "count", minimum=0),
              "tenant_id": check_int(tenant_id, "tenant_id"),
              "tenants": check_int(tenants, "tenants", minimum=1)}
    conn.execute(_QUERIES["fill_pending"].sql, params)
    return count


def analyze(conn: psycopg.Connection, *, vacuum: bool = False) -> None:
    """ANALYZE the jobs table, so the planner knows what the bulk load changed; with `vacuum`,
    VACUUM it as well (needs an autocommit connection outside a transaction)."""
    name = "vacuum_analyze_jobs" if check_bool(vacuum, "vacuum") else "analyze_jobs"
    conn.execute(_QUERIES[name].sql)


def table_size(conn: psycopg.Connection) -> str:
    """The jobs table's size with its indexes, e.g. '12 MB'."""
    return conn.execute(_QUERIES["jobs_table_size"].sql).fetchone()[0]


def table_pages(conn: psycopg.Connection) -> int:
    """The pages of the jobs table itself (its heap, no indexes)."""
    return conn.execute(_QUERIES["jobs_heap_pages"].sql).fetchone()[0]


def explain(conn: psycopg.Connection, query: str, params: Mapping[str, Any] | None = None, *,
            analyze: bool = False, costs: bool = True, fmt: str = "json") -> Any:
    """The plan of `query`: a str (fmt="text") or the parsed JSON document (fmt="json").

    Without `analyze` the statement is planned, not run, even when it modifies rows. With
    `analyze` it runs inside a transaction that is rolled back whatever happens.
    """
    check_bool(analyze, "analyze")
    check_bool(costs, "costs")
    check_choice(fmt, "fmt", FORMATS)
    options = [sql.SQL("FORMAT {}").format(sql.SQL(fmt.upper()))]
    if analyze:
        options += [sql.SQL("ANALYZE"), sql.SQL("BUFFERS")]
    if not costs:
        options.append(sql.SQL("COSTS OFF"))
    statement = sql.SQL("EXPLAIN ({}) {}").format(sql.SQL(", ").join(options), sql.SQL(query))
    if analyze:
        try:
            with conn.transaction():
                raise _Rollback(conn.execute(statement, params).fetchall())
        except _Rollback as done:
            rows = done.args[0]
    else:
        rows = conn.execute(statement, params).fetchall()
    if fmt == "text":
        return "\n".join(row[0] for row in rows)
    doc = rows[0][0]
    return json.loads(doc) if isinstance(doc, str) else doc


def nodes(plan: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every node of a JSON plan (a document's [0]["Plan"]), depth first."""
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def _scan_nodes(doc: Any, relation: str) -> list[Mapping[str, Any]]:
    return [n for n in nodes(doc[0]["Plan"])
            if "Scan" in n["Node Type"] and n.get("Relation Name") == relation]


def scans(doc: Any, relation: str = "jobs") -> set[str]:
    """How a JSON plan document reads `relation`: e.g. {"Index Scan using jobs_runnable"}."""
    return {n["Node Type"] + (f" using {n['Index Name']}" if "Index Name" in n else "")
            for n in _scan_nodes(doc, relation)}


def indexes(doc: Any, relation: str = "jobs") -> set[str]:
    """The indexes through which a JSON plan document reads `relation`."""
    return {n["Index Name"] for n in _scan_nodes(doc, relation) if "Index Name" in n}


def seq_scans(doc: Any, relation: str = "jobs") -> int:
    """How many times a JSON plan document reads all of `relation` (sequential scans)."""
    return sum(n["Node Type"] == "Seq Scan" for n in _scan_nodes(doc, relation))
