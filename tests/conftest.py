"""Fixtures for every test: plain schema names (the notebooks' suffix is theirs alone), and
the hypothesis profile."""

from __future__ import annotations

import pytest
from hypothesis import settings

# Property tests run with no per-example deadline: on a busy two-core machine (CI runs the
# suite twice, beside other work) a 200 ms deadline fails tests for being slow, not wrong.
# Derandomized, so a failure seen once is seen again on the same code.
settings.register_profile("course", deadline=None, derandomize=True)
settings.load_profile("course")


@pytest.fixture(autouse=True)
def _plain_schema_names(monkeypatch):
    """Python tests make their own unique schemas; the suffix `make test` sets is meant for
    the notebooks it runs (their kernels inherit it), so tests see plain names."""
    monkeypatch.delenv("CACHEQUEUE_SCHEMA_SUFFIX", raising=False)
