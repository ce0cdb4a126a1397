"""Shared fixtures: each database test gets its own freshly built schema."""

from __future__ import annotations

import uuid

import pytest

from cachequeue import db


@pytest.fixture(autouse=True)
def _plain_schema_names(monkeypatch):
    """Python tests make their own unique schemas; the suffix `make test` sets is meant for
    the notebooks it runs (their kernels inherit it), so tests see plain names."""
    monkeypatch.delenv("CACHEQUEUE_SCHEMA_SUFFIX", raising=False)


@pytest.fixture
def schema(database_url) -> str:
    """A unique schema name, created with the course schema and dropped after the test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with db.connect() as conn:
        db.reset_schema(conn, name)
    yield name
    with db.connect() as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


@pytest.fixture
def conn(schema):
    """An autocommit connection whose search_path is the test's schema."""
    with db.connect(schema) as connection:
        yield connection
