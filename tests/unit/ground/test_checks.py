"""The one rule of cachequeue.checks: TypeError for a wrong type, ValueError for a bad value,
always (value, name), the name and the value in the message. Each kind of check is written
once: the places that used to spell it out by hand give the same answer through it."""

import math
import uuid
from fractions import Fraction
from types import SimpleNamespace

import pytest
from psycopg.pq import TransactionStatus

from cachequeue import checks, db
from cachequeue.cache import EarlyRefreshCache
from cachequeue.course.labs import perf
from cachequeue.course.model.queue_model import QueueModel
from cachequeue.course.probes import workload
from cachequeue.errors import InvalidJob, PayloadTooLarge
from cachequeue.queue import jobs, limits, ratelimit
from cachequeue.service import Problem
from cachequeue.service.requests import parse_job_request
from cachequeue.shared.client import check_namespace

WRONG_TYPE = [
    (checks.check_int, (1.5, "n"), {}),
    (checks.check_int, (True, "n"), {}),
    (checks.check_int, ("3", "n"), {}),
    (checks.check_finite, (None, "x"), {}),
    (checks.check_finite, (False, "x"), {}),
    (checks.check_seconds, ("5", "ttl"), {}),
    (checks.check_seconds, (True, "ttl"), {}),
    (checks.check_seconds, (None, "ttl"), {}),
    (checks.check_text, (5, "kind"), {}),
    (checks.check_text, (None, "kind"), {}),
    (checks.check_text, (b"kind", "kind"), {}),
    (checks.check_bool, (1, "flag"), {}),
    (checks.check_bool, (None, "flag"), {}),
    (checks.check_callable, (42, "loader"), {}),
    (checks.check_instance, ("x", "token", uuid.UUID), {}),
    (checks.check_finite, ("1", "beta"), {"above": 0}),
    (checks.check_finite, (None, "burst"), {"minimum": 1}),
]

BAD_VALUE = [
    (checks.check_int, (0, "n"), {"minimum": 1}),
    (checks.check_int, (11, "n"), {"maximum": 10}),
    (checks.check_finite, (math.nan, "x"), {}),
    (checks.check_finite, (math.inf, "x"), {}),
    (checks.check_seconds, (0, "ttl"), {}),
    (checks.check_seconds, (-1, "ttl"), {"allow_zero": True}),
    (checks.check_seconds, (math.nan, "ttl"), {}),
    (checks.check_seconds, (math.inf, "ttl"), {}),
    (checks.check_seconds, (10**400, "ttl"), {}),
    (checks.check_seconds, (61, "ttl"), {"upper": 60.0}),
    (checks.check_text, ("", "kind"), {}),
    (checks.check_text, ("   ", "kind"), {}),
    (checks.check_text, ("abcd", "kind"), {"limit": 3}),
    (checks.check_choice, ("random", "policy", ("fifo", "lru")), {}),
    (checks.check_choice, ([], "policy", {"fifo", "lru"}), {}),
    (checks.check_finite, (0, "beta"), {"above": 0}),
    (checks.check_finite, (-0.5, "beta"), {"above": 0}),
    (checks.check_finite, (0.5, "burst"), {"minimum": 1}),
    (checks.check_finite, (math.inf, "beta"), {"above": 0}),
]


@pytest.mark.parametrize(("check", "args", "kw"), WRONG_TYPE)
def test_a_wrong_type_is_a_type_error_naming_the_argument(check, args, kw):
    with pytest.raises(TypeError, match=f"^{args[1]} must be "):
        check(*args, **kw)


@pytest.mark.parametrize(("check", "args", "kw"), BAD_VALUE)
def test_a_bad_value_is_a_value_error_naming_the_argument(check, args, kw):
    with pytest.raises(ValueError, match=f"^{args[1]} must "):
        check(*args, **kw)


def test_good_values_come_back_in_the_form_to_use():
    assert checks.check_int(3, "n", minimum=1, maximum=3) == 3
    assert checks.check_finite(-2, "x") == -2.0
    assert checks.check_seconds(Fraction(1, 4), "ttl") == 0.25
    assert type(checks.check_seconds(2, "ttl")) is float
    assert checks.check_seconds(0, "delay", allow_zero=True) == 0.0
    assert checks.check_seconds(60, "ttl", upper=60.0) == 60.0
    assert checks.check_text(None, "key", optional=True) is None
    assert checks.check_text(" a ", "key") == " a "
    assert checks.check_bool(False, "flag") is False
    assert checks.check_choice("lru", "policy", ("fifo", "lru")) == "lru"
    assert checks.check_callable(print, "f") is print
    token = uuid.uuid4()
    assert checks.check_instance(token, "token", (uuid.UUID, str)) is token


def test_messages_show_the_bound_and_what_was_given():
    with pytest.raises(ValueError) as info:
        checks.check_seconds(120, "negative_ttl", upper=60.0, upper_name="max_ttl")
    assert str(info.value) == "negative_ttl must be > 0 and <= max_ttl (60) seconds, got 120"
    with pytest.raises(TypeError) as info:
        checks.check_seconds(True, "ttl")
    assert str(info.value) == "ttl must be a number of seconds, got bool True"
    with pytest.raises(TypeError) as info:
        checks.check_instance("x", "token", uuid.UUID)
    assert str(info.value) == "token must be a uuid.UUID, got str"


def test_finite_with_bounds_says_the_bound_and_keeps_the_edge():
    assert checks.check_finite(1, "burst", minimum=1) == 1.0
    assert checks.check_finite(Fraction(1, 8), "beta", above=0) == 0.125
    with pytest.raises(ValueError) as info:
        checks.check_finite(0, "beta", above=0)
    assert str(info.value) == "beta must be > 0, got 0"
    with pytest.raises(ValueError) as info:
        checks.check_finite(0.5, "burst", minimum=1)
    assert str(info.value) == "burst must be >= 1, got 0.5"


@pytest.mark.parametrize(("call", "message"), [
    (lambda: EarlyRefreshCache(beta=0), "beta must be > 0, got 0"),
    (lambda: ratelimit.set_limit(None, "k", per_second=-1), "per_second must be > 0, got -1"),
    (lambda: ratelimit.set_limit(None, "k", per_second=1, burst=0), "burst must be >= 1, got 0"),
    (lambda: workload.read_trace(5, rate=0), "rate must be > 0, got 0"),
    (lambda: workload.read_trace(5, skew=-1), "skew must be >= 0, got -1"),
    (lambda: perf.jobs_ceiling(0, 2), "commits_per_second must be > 0, got 0"),
    (lambda: perf.jobs_ceiling(100, -2), "commits_per_job must be > 0, got -2"),
])
def test_positive_numbers_are_checked_once_everywhere(call, message):
    """The four places that checked a finite number and then `<= 0` by hand (nothing is
    written: the check comes before the connection is used, here None)."""
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message


def _connection(autocommit, status):
    return SimpleNamespace(autocommit=autocommit, info=SimpleNamespace(transaction_status=status))


@pytest.mark.parametrize(("autocommit", "status"), [
    (False, TransactionStatus.IDLE), (True, TransactionStatus.INTRANS),
    (True, TransactionStatus.INERROR), (False, TransactionStatus.INTRANS)])
def test_autocommit_and_idle_is_one_check_with_one_message(autocommit, status):
    with pytest.raises(ValueError) as info:
        checks.check_autocommit_idle(_connection(autocommit, status), "run_once")
    assert str(info.value) == ("run_once needs an autocommit connection outside any transaction "
                               "(db.connect(schema)); do not call it inside conn.transaction()")
    good = _connection(True, TransactionStatus.IDLE)
    assert checks.check_autocommit_idle(good, "run_once") is good
    with pytest.raises(TypeError, match="run_once needs a psycopg connection, got str"):
        checks.check_autocommit_idle("postgresql://", "run_once")


def test_the_three_callers_use_it():
    """single_pass.run_once, horizon's probes and perf.commit_times refuse a connection
    inside a transaction with the same words (a real connection: tests/integration)."""
    in_transaction = _connection(True, TransactionStatus.INTRANS)
    from cachequeue.course.probes import horizon
    from cachequeue.queue import single_pass

    calls = {"run_once": lambda: single_pass.run_once(in_transaction, {"k": print}),
             "vacuum_jobs": lambda: horizon.vacuum_jobs(in_transaction),
             "commit_times": lambda: perf.commit_times(in_transaction, 3)}
    for what, call in calls.items():
        with pytest.raises(ValueError, match=rf"^{what} needs an autocommit connection outside"):
            call()


PAYLOAD_MESSAGE = "payload must be a JSON object (a dict), got list"


def test_a_payload_is_a_json_object_in_the_queue_its_model_and_the_service():
    assert limits.payload_json({"b": 1, "a": [1, "x"]}) == '{"b":1,"a":[1,"x"]}'
    with pytest.raises(InvalidJob) as info:
        limits.payload_json([1, 2])
    assert str(info.value) == PAYLOAD_MESSAGE
    with pytest.raises(InvalidJob) as info:
        jobs.submit(None, tenant_id=1, kind="k", payload=[1, 2])  # refused before any SQL
    assert str(info.value) == PAYLOAD_MESSAGE
    with pytest.raises(InvalidJob) as info:
        QueueModel().submit(tenant_id=1, kind="k", payload=[1, 2])
    assert str(info.value) == PAYLOAD_MESSAGE
    with pytest.raises(Problem) as info:
        parse_job_request(b'{"kind": "k", "payload": [1, 2]}')
    assert info.value.status == 422 and PAYLOAD_MESSAGE in info.value.detail
    with pytest.raises(PayloadTooLarge):
        limits.payload_json({"x": "y" * limits.MAX_PAYLOAD_BYTES})


@pytest.mark.parametrize(("call", "name"), [
    (lambda: db.schema_name(5), "schema name"),
    (lambda: db.schema_name(b"ch01"), "schema name"),
    (lambda: check_namespace(5), "namespace"),
    (lambda: check_namespace(None), "namespace"),
])
def test_a_name_that_is_not_a_str_is_a_type_error(call, name):
    with pytest.raises(TypeError, match=f"^{name} must be a str, got "):
        call()
    with pytest.raises(ValueError):
        db.schema_name("Not-A-Name")
    with pytest.raises(ValueError):
        check_namespace("ch10")
