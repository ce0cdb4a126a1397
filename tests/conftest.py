"""Fixtures for every test: plain schema names (the notebooks' suffix is theirs alone)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _plain_schema_names(monkeypatch):
    """Python tests make their own unique schemas; the suffix `make test` sets is meant for
    the notebooks it runs (their kernels inherit it), so tests see plain names."""
    monkeypatch.delenv("CACHEQUEUE_SCHEMA_SUFFIX", raising=False)
