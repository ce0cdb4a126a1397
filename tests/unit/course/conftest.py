"""Fixtures for the course's unit tests."""

from __future__ import annotations

import fakeredis
import pytest


@pytest.fixture
def client():
    """A fresh in-memory Redis (fakeredis, with Lua) that answers str, as the course's clients do."""
    return fakeredis.FakeRedis(decode_responses=True)
