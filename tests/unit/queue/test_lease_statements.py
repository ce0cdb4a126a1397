"""Every statement that checks a lease reads the database clock once (queue/sql/queries.sql).

cq_now() is clock_timestamp() unless a session froze it, and clock_timestamp() moves on
within a statement; STABLE does not change that. A statement that read it twice could
check the lease at one instant and start the new one at another, so each of these reads it
once, in a materialised `clock` CTE, and uses that reading everywhere.
"""

from __future__ import annotations

import re

import pytest

from cachequeue.queue import jobs

LEASE_STATEMENTS = ["claim", "heartbeat", "finish", "finish_many", "fail"]
_ONE_CLOCK = re.compile(r"WITH clock AS MATERIALIZED \(\s*SELECT cq_now\(\) AS now\b")


def clock_reads(sql: str) -> int:
    return len(re.findall(r"cq_now\(\)", re.sub(r"--[^\n]*", "", sql)))


@pytest.mark.parametrize("name", LEASE_STATEMENTS)
def test_the_statement_reads_the_clock_once_in_a_materialised_cte(name):
    sql = jobs.query(name).sql
    assert clock_reads(sql) == 1, f"{name} reads cq_now() {clock_reads(sql)} times"
    assert _ONE_CLOCK.search(sql), f"{name} does not start with the materialised clock CTE"


def test_the_count_sees_a_second_reading():
    twice = "UPDATE jobs SET locked_until = cq_now() + interval '1 s' WHERE locked_until > cq_now()"
    assert clock_reads(twice) == 2
    assert clock_reads("-- cq_now() in a comment\nSELECT 1") == 0
