"""GET /metrics: Prometheus text from the tables, no token, bounded tenant labels."""

from prometheus_client.parser import text_string_to_metric_families

from cachequeue import db
from cachequeue.course import plans
from cachequeue.service import exporter


def test_metrics_are_prometheus_text_with_bounded_tenant_labels(live, schema):
    with db.connect(schema) as conn:
        plans.fill_pending(conn, 3_000, tenant_id=1, tenants=3_000)
    with live.client() as http:
        answer = http.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=")
    families = {f.name: f for f in text_string_to_metric_families(answer.text)}
    pending = families["cq_jobs_pending"].samples
    assert len(pending) == exporter.TOP_TENANTS + 1
    assert sum(s.value for s in pending) == 3_000
    assert {s.labels["tenant"] for s in pending} >= {"other", "1"}
