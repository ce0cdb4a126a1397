"""cachequeue.db against a real server (the shared embedded one: test_embedded_shared.py)."""

import os
import subprocess
import sys
import uuid

import pytest

from cachequeue import db, queue
from cachequeue.course import chapter
from cachequeue.course.app import data
from cachequeue.errors import ConfigurationError, DatabaseUnavailable, UnknownKind
from cachequeue.queue import jobs


def test_connect_is_autocommit_and_reaches_postgres_15_or_newer(database_url):
    with db.connect() as conn:
        assert conn.autocommit
        assert conn.info.server_version >= 150000
        assert db.server_version(conn).startswith("PostgreSQL ")


def test_reset_schema_builds_persistent_tables_and_can_run_twice(schema):
    with db.connect(schema) as conn:
        tables = {r[0]: r[1] for r in conn.execute(
            "SELECT c.relname, c.relpersistence FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relkind = 'r'", [schema])}
        for name in ("jobs", "job_attempts", "job_results", "job_audit", "documents"):
            assert tables[name] == "p", f"{name} must be a permanent table"
        assert data.load_sample(conn)["document_versions"] == 9
        chapter.reset(conn, schema)  # again: everything is rebuilt empty
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 0
        states = conn.execute("SELECT enum_range(NULL::job_state)::text").fetchone()[0]
        assert states == "{pending,running,done,failed,cancelled}"


def test_the_queue_installs_without_the_course_and_only_once(database_url):
    """A schema with the clock and the queue alone: no tenants or documents, no job kinds
    (the course's are registered by chapter.reset only), and a second install (another
    process starting) changes nothing."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with db.connect() as conn:
        db.reset_schema(conn, name, queue.install)
        try:
            assert queue.install(conn) is False
            assert conn.execute("SELECT to_regclass('tenants')").fetchone()[0] is None
            assert queue.kinds.registered(conn) == {}
            with pytest.raises(UnknownKind):
                jobs.submit(conn, tenant_id=7, kind="noop", payload={})
            assert queue.kinds.register(conn, {"noop": "do nothing"}) == 1
            assert queue.kinds.register(conn, {"noop": "again"}) == 0
            job = jobs.submit(conn, tenant_id=7, kind="noop", payload={})
            assert jobs.claim(conn, lease=5).job_id == job
        finally:
            db.drop_schema(conn, name)


def test_two_chapters_do_not_share_tables(schema):
    with db.connect(schema) as a, db.connect() as b:
        data.load_sample(a)
        chapter.reset(b, schema + "_other")
        try:
            assert b.execute("SELECT count(*) FROM tenants").fetchone()[0] == 0
            assert a.execute("SELECT count(*) FROM tenants").fetchone()[0] == 2
        finally:
            db.drop_schema(b, schema + "_other")


def test_set_clock_freezes_and_releases_the_database_clock(conn):
    db.set_clock(conn, "2026-01-01 00:00:30+00")
    first = conn.execute("SELECT cq_now()").fetchone()[0]
    assert first.isoformat() == "2026-01-01T00:00:30+00:00"
    assert conn.execute("SELECT cq_now()").fetchone()[0] == first
    db.set_clock(conn, None)
    assert conn.execute("SELECT cq_now()").fetchone()[0].year >= 2026
    assert conn.execute("SELECT cq_now() > %s", [first]).fetchone()[0]


@pytest.mark.parametrize("name", ["Bad", "1x", "a-b", "pg_catalog", "x" * 64, ""])
def test_schema_names_are_checked(name):
    with pytest.raises(ValueError, match="schema name"):
        db.connect(name)


@pytest.mark.parametrize("name", [5, b"ch01", ["ch01"]])
def test_a_schema_name_that_is_not_a_str_is_a_type_error(name):
    with pytest.raises(TypeError, match="schema name must be a str"):
        db.connect(name)


@pytest.mark.parametrize(
    ("url", "message"),
    [("host=127.0.0.1 port", "malformed"), ("mysql://root@127.0.0.1/test", "must start with postgresql://")],
)
def test_malformed_database_url_gets_a_short_clear_error(monkeypatch, url, message):
    monkeypatch.setenv("DATABASE_URL", url)
    with pytest.raises(ConfigurationError, match=message) as info:
        db.database_url()
    assert info.value.__context__ is None or info.value.__suppress_context__  # no driver traceback


def test_unreachable_server_gets_a_short_clear_error(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://postgres@127.0.0.1:9/test")
    with pytest.raises(DatabaseUnavailable, match="cannot connect") as info:
        db.connect()
    assert "\n" not in str(info.value)


def test_cli_reports_the_server_or_the_problem(monkeypatch):
    env = {**os.environ, "DATABASE_URL": "postgresql://postgres@127.0.0.1:9/test"}
    bad = subprocess.run([sys.executable, "-m", "cachequeue.db"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1
    assert "Traceback" not in bad.stderr and "cannot connect" in bad.stderr
    good = subprocess.run([sys.executable, "-m", "cachequeue.db"],
                          capture_output=True, text=True, timeout=60)
    assert good.returncode == 0, good.stderr
    assert good.stdout.startswith("database: PostgreSQL ")


def test_schema_suffix_keeps_a_second_copy_of_a_chapter_apart(monkeypatch, schema):
    monkeypatch.setenv("CACHEQUEUE_SCHEMA_SUFFIX", "_copy")
    assert db.schema_name(schema) == schema + "_copy"
    with db.connect() as conn:
        chapter.reset(conn, schema)
        try:
            with db.connect(schema) as copy:
                assert copy.execute("SELECT current_schema()").fetchone()[0] == schema + "_copy"
        finally:
            db.drop_schema(conn, schema)  # the suffix _copy is still set
    monkeypatch.setenv("CACHEQUEUE_SCHEMA_SUFFIX", "-bad")
    with pytest.raises(ValueError, match="SUFFIX"):
        db.schema_name("ch01")
    monkeypatch.delenv("CACHEQUEUE_SCHEMA_SUFFIX")  # the schema fixture drops with it unset


def test_autocommit_and_idle_on_a_real_connection(database_url):
    from cachequeue.checks import check_autocommit_idle

    with db.connect() as conn:
        assert check_autocommit_idle(conn, "run_once") is conn
        with conn.transaction(), pytest.raises(ValueError, match="outside any transaction"):
            check_autocommit_idle(conn, "run_once")
    with db.connect(autocommit=False) as conn, pytest.raises(ValueError, match="autocommit"):
        check_autocommit_idle(conn, "run_once")
