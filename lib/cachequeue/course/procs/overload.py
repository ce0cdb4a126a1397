"""Chapter 07's overload: hold a service at its limit of calls in flight, then ask once more.

    seen = overload.one_more("ch07", api_url=api.url, metrics_url=api.metrics_url,
                             headers=bearer(11), body={"kind": "noop", "run_after": 3600})

`one_more` holds the jobs table of `schema` in SHARE mode on a connection of its own (as
CREATE INDEX without CONCURRENTLY does: reads go on, every insert waits), sends `held`
submits from threads, waits until the service's `cq_http_in_flight` gauge (operator
listener) reports all of them under way, sends one more and times its answer, then lets the
lock go and collects the held answers. Nothing sleeps on the hope that something happened:
every step waits for what it can see, with a deadline. The service must allow `held` calls
in flight (its `max_in_flight`, 4 x pool_size by default) and bounds long enough that the
held submits outlast the wait (chapter 07 starts it with 30 s statement and lock timeouts).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ...checks import check_int, check_seconds, check_text
from ..probes import tablelocks
from ..views import scrapes

__all__ = ["metric", "one_more", "until"]


def until(condition: Callable[[], bool], timeout: float, what: str, *, poll: float = 0.01) -> None:
    """Return once `condition()` is true, checking every `poll` s; TimeoutError naming
    `what` after `timeout` s (also used by `capacity.crowd`)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {timeout:g} s")
        time.sleep(poll)  # re-check an observable condition; no outcome depends on this delay


def metric(client: Any, name: str) -> float:
    """The first sample of `name` in the /metrics scrape of `client` (an httpx.Client)."""
    scrape = scrapes.frame(client.get("/metrics").text)
    return float(scrapes.series(scrape, name).iloc[0])


def one_more(schema: str, *, api_url: str, metrics_url: str, headers: dict[str, str],
             body: dict[str, Any], held: int = 32, timeout: float = 30.0) -> dict[str, Any]:
    """Hold `held` submits of `body` behind a SHARE lock, send one more (see the module
    docstring). Returns the extra answer (`status`, `code`, `retry_after`, `detail`,
    `seconds` it took), the held answers' statuses once the lock is gone (`held`), and the
    service's `cq_http_shed_total` after it all (`shed_total`)."""
    import httpx  # the `lab` extra

    check_text(schema, "schema")
    held = check_int(held, "held", minimum=1, maximum=1000)
    timeout = check_seconds(timeout, "timeout", upper=300.0)
    answers: list[int | None] = [None] * held
    limits = httpx.Limits(max_connections=held + 4)
    with httpx.Client(base_url=api_url, timeout=timeout, limits=limits) as api, \
            httpx.Client(base_url=metrics_url, timeout=timeout) as operator:
        def submit(i: int) -> None:
            answers[i] = api.post("/v1/jobs", json=body, headers=headers).status_code

        threads = [threading.Thread(target=submit, args=(i,), daemon=True)
                   for i in range(held)]
        with tablelocks.index_build_lock(schema):
            for thread in threads:
                thread.start()
            until(lambda: metric(operator, "cq_http_in_flight") == held, timeout,
                  f"{held} submits in flight")
            started = time.perf_counter()
            extra = api.post("/v1/jobs", json=body, headers=headers)
            seconds = time.perf_counter() - started
        for thread in threads:
            thread.join(timeout)
        shed_total = metric(operator, "cq_http_shed_total")
    problem = extra.json() if extra.headers.get("content-type", "").endswith("json") else {}
    return {"status": extra.status_code, "code": problem.get("code"),
            "retry_after": extra.headers.get("retry-after"), "detail": problem.get("detail"),
            "seconds": seconds, "held": answers, "shed_total": shed_total}
