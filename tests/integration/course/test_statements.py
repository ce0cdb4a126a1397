"""course.statements on a real connection: it lists what a function sends, and it runs a
second call in the gap between two statements, where a read-then-write answer breaks."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from cachequeue import db
from cachequeue.course.app import effects
from cachequeue.course.probes import statements

INSERT = ("INSERT INTO receipts (business_key, job_id) VALUES (%s, 1)"
          " ON CONFLICT (business_key) DO NOTHING RETURNING business_key")


def one_statement(conn, key):
    return conn.execute(INSERT, [key]).fetchone() is not None


def read_then_write(conn, key):
    if conn.execute("SELECT 1 FROM receipts WHERE business_key = %s", [key]).fetchone():
        return False
    conn.execute(INSERT, [key])
    return True


@pytest.fixture
def receipts(conn, schema):
    effects.install(conn)
    with db.connect(schema) as other:
        yield conn, other


def test_recording_lists_the_statements_and_leaves_the_connection_as_it_was(conn):
    factory = conn.cursor_factory
    with statements.recording(conn) as sent:
        conn.execute("SELECT  1")
        with conn.transaction(), conn.cursor() as cur:
            cur.execute(sql.SQL("SELECT {}").format(sql.Literal(2)))
            cur.executemany("SELECT %s", [(3,), (4,)])
    conn.execute("SELECT 5")
    assert sent == ["SELECT 1", "SELECT 2", "SELECT %s"]
    assert conn.cursor_factory is factory


def test_the_other_call_runs_after_a_one_statement_function(receipts):
    conn, other = receipts
    with statements.gap(conn, lambda: one_statement(other, "k")) as seen:
        mine = one_statement(conn, "k")
    assert (mine, seen.result, seen.in_between, len(seen.statements)) == (True, False, False, 1)


def test_the_other_call_runs_in_the_gap_of_a_read_then_write_function(receipts):
    conn, other = receipts
    with statements.gap(conn, lambda: read_then_write(other, "k")) as seen:
        mine = read_then_write(conn, "k")
    assert seen.in_between and len(seen.statements) == 2
    assert (mine, seen.result) == (True, True), "both runs believe they sent the receipt"
    assert conn.execute("SELECT count(*) FROM receipts").fetchone()[0] == 1


def test_a_plain_insert_after_the_read_hits_the_unique_constraint(receipts):
    conn, other = receipts

    def plain(c, key):
        if c.execute("SELECT 1 FROM receipts WHERE business_key = %s", [key]).fetchone():
            return False
        c.execute("INSERT INTO receipts (business_key, job_id) VALUES (%s, 1)", [key])
        return True

    with (pytest.raises(psycopg.errors.UniqueViolation),
          statements.gap(conn, lambda: plain(other, "k"))):
        plain(conn, "k")
    assert conn.cursor_factory is psycopg.Cursor


def test_other_must_be_callable(conn):
    with pytest.raises(TypeError, match="other must be"), statements.gap(conn, "not callable"):
        pass
