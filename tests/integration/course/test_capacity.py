"""The two ceilings of chapter 08 on real processes: a small pool sheds the request past its
limit with 503 overloaded, and each handler slot holds its payload in the worker's memory."""

from cachequeue.course.app import webapp
from cachequeue.course.procs import capacity
from cachequeue.course.procs.stack import Stack
from cachequeue.queue import jobs


def test_the_request_past_the_limit_is_shed_at_once(conn, schema):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    stack = Stack(schema, app=capacity.SMALL_APP)
    try:
        api = stack.start_api(access_log=False, metrics_port=0)
        seen = capacity.crowd(conn, schema, api_url=api.url, headers=webapp.bearer(11),
                              job_id=job_id, metrics_url=api.wait_for("listening")["metrics_url"])
    finally:
        assert stack.close() == {"service": 0}
    assert (seen["in_flight"], seen["waiting"]) == (capacity.MAX_IN_FLIGHT, capacity.POOL_SIZE)
    assert (seen["extra_status"], seen["extra_code"]) == (503, "overloaded")
    assert seen["held"] == [200] * capacity.MAX_IN_FLIGHT and seen["shed"] == 1


def test_each_slot_holds_its_payload(conn, schema):
    stack = Stack(schema, handlers=capacity.HANDLERS_SPEC)
    try:
        worker = stack.start("slots", concurrency=2, lease=60)
        sizes = [capacity.rss(worker.pid)]
        for _ in range(2):
            job = jobs.submit(conn, tenant_id=1, kind="noop", payload={"mib": 16})
            worker.wait_for("holding", job=job)
            sizes.append(capacity.rss(worker.pid))
    finally:
        stack.close()
    steps = [(b - a) / capacity.MIB for a, b in zip(sizes, sizes[1:], strict=False)]
    assert all(16 <= step < 17 for step in steps), steps


def test_rss_of_this_process_is_plausible():
    import os

    assert 10 * capacity.MIB < capacity.rss(os.getpid()) < 10_000 * capacity.MIB
