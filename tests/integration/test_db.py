"""cachequeue.db and cachequeue.embedded against a real server."""

import os
import subprocess
import sys

import psycopg
import pytest

from cachequeue import db
from cachequeue.course import data
from cachequeue.errors import ConfigurationError, DatabaseUnavailable


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
        db.reset_schema(conn, schema)  # again: everything is rebuilt empty
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 0
        states = conn.execute("SELECT enum_range(NULL::job_state)::text").fetchone()[0]
        assert states == "{pending,running,done,failed,cancelled}"


def test_two_chapters_do_not_share_tables(schema):
    with db.connect(schema) as a, db.connect() as b:
        data.load_sample(a)
        db.reset_schema(b, schema + "_other")
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


@pytest.mark.parametrize("name", ["Bad", "1x", "a-b", "pg_catalog", "x" * 64, "", 5])
def test_schema_names_are_checked(name):
    with pytest.raises(ValueError, match="schema name"):
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


def test_embedded_server_starts_once_for_two_processes_and_listens_on_a_socket_only(tmp_path):
    env = {**os.environ, "CACHEQUEUE_HOME": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    cmd = [sys.executable, "-m", "cachequeue.embedded", "start"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    try:
        urls = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            urls.append(out.strip())
        assert urls[0] == urls[1] and "host=" in urls[0]
        with psycopg.connect(urls[0]) as conn:
            assert conn.execute("SHOW listen_addresses").fetchone()[0] == ""
            assert conn.info.server_version >= 180000
    finally:
        stop = subprocess.run([sys.executable, "-m", "cachequeue.embedded", "stop"], env=env,
                              capture_output=True, text=True, timeout=120)
    assert stop.stdout.strip() == "stopped", stop.stderr


def test_schema_suffix_keeps_a_second_copy_of_a_chapter_apart(monkeypatch, schema):
    monkeypatch.setenv("CACHEQUEUE_SCHEMA_SUFFIX", "_copy")
    assert db.schema_name(schema) == schema + "_copy"
    with db.connect() as conn:
        db.reset_schema(conn, schema)
        try:
            with db.connect(schema) as copy:
                assert copy.execute("SELECT current_schema()").fetchone()[0] == schema + "_copy"
        finally:
            db.drop_schema(conn, schema)  # the suffix _copy is still set
    monkeypatch.setenv("CACHEQUEUE_SCHEMA_SUFFIX", "-bad")
    with pytest.raises(ValueError, match="SUFFIX"):
        db.schema_name("ch01")
    monkeypatch.delenv("CACHEQUEUE_SCHEMA_SUFFIX")  # the schema fixture drops with it unset
