"""GET /metrics: on the operator listener only, this process's series on every replica, the
queue's database-wide series only where queue_metrics is on; counters and histograms that
Prometheus can aggregate, never windowed rates or quantile gauges; bounded tenant labels."""

from prometheus_client.parser import text_string_to_metric_families
from servicekit import auth

from cachequeue import db
from cachequeue.course.probes import plans
from cachequeue.queue import jobs
from cachequeue.service import exporter


def families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_the_public_listener_serves_no_metrics(live):
    with live.client() as http:
        public = http.get("/metrics")
        paths = http.get("/openapi.json").json()["paths"]
    assert public.status_code == 404 and public.headers["content-type"] == "application/problem+json"
    assert "/metrics" not in paths


def test_metrics_are_prometheus_text_with_bounded_tenant_labels(make_live, schema):
    live = make_live(queue_metrics=True)
    with db.connect(schema) as conn:
        plans.fill_pending(conn, 3_000, tenant_id=1, tenants=3_000)
    with live.operator() as ops:
        answer = ops.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=")
    pending = families(answer.text)["cq_jobs_pending"].samples
    assert len(pending) == exporter.TOP_TENANTS + 1
    assert sum(s.value for s in pending) == 3_000
    assert {s.labels["tenant"] for s in pending} >= {"other", "1"}


def test_database_wide_series_come_from_one_place_and_process_series_from_every_replica(
        make_live, conn):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    exporting, other = make_live(queue_metrics=True), make_live()
    seen = {}
    for name, live in (("exporting", exporting), ("other", other)):
        with live.client() as http:
            assert http.get("/v1/jobs/1", headers=auth(11)).status_code == 200
        with live.operator() as ops:
            seen[name] = families(ops.get("/metrics").text)
    assert "cq_jobs_pending" in seen["exporting"] and "cq_jobs_pending" not in seen["other"]
    for found in seen.values():  # each replica counts its own requests
        [sample] = [s for s in found["cq_http_requests"].samples
                    if s.name == "cq_http_requests_total"
                    and s.labels == {"route": "/v1/jobs/{job_id}", "method": "GET", "status": "200"}]
        assert sample.value == 1


def test_rates_are_counters_and_durations_a_histogram(make_live, conn):
    live = make_live(queue_metrics=True)
    ids = [jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n}) for n in range(3)]
    first, second, third = (jobs.claim(conn) for _ in ids)
    jobs.finish(conn, first, {})
    jobs.fail(conn, second, "boom")
    jobs.finish(conn, third, {})
    with live.operator() as ops:
        found = families(ops.get("/metrics").text)
    assert found["cq_attempts_started"].type == "counter"
    started = {s.labels["kind"]: s.value for s in found["cq_attempts_started"].samples
               if s.name.endswith("_total")}
    ended = {s.labels["outcome"]: s.value for s in found["cq_attempts_ended"].samples
             if s.name.endswith("_total")}
    assert started == {"noop": 3} and ended == {"done": 2, "retry": 1}
    histogram = found["cq_attempt_duration_seconds"]
    assert histogram.type == "histogram"
    count = [s.value for s in histogram.samples if s.name.endswith("_count")]
    infinite = [s.value for s in histogram.samples if s.labels.get("le") == "+Inf"]
    assert count == infinite == [2]
    # Nothing Prometheus cannot aggregate: no quantile label, no windowed rate or ratio.
    for family in found.values():
        assert not family.name.endswith(("_per_second", "_ratio")), family.name
        assert all("quantile" not in s.labels for s in family.samples), family.name


def test_the_tenant_label_rule_is_written_once_and_installed_once(conn):
    from cachequeue.queue import metrics

    rules = [name for name in metrics.query if "ELSE 'other'" in metrics.query[name].sql]
    assert rules == ["install"], rules
    assert metrics.figure(conn, "depth") == []  # installs it on first use
    metrics.install(conn)  # again: nothing happens
    [(count,)] = conn.execute("SELECT count(*) FROM pg_proc WHERE proname = 'cq_tenant_label' "
                              "AND pronamespace = current_schema()::regnamespace").fetchall()
    assert count == 1
