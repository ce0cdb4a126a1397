"""POST /v1/jobs and GET /v1/jobs/{id} on a real socket: validate, persist, 202; status from
the jobs table; idempotency; tenants; nothing written when a request is refused."""

import json

import pytest
from servicekit import auth

from cachequeue.queue import jobs
from cachequeue.queue.limits import MAX_PAYLOAD_BYTES
from cachequeue.service.requests import MAX_BODY_BYTES


def count_jobs(conn) -> int:
    return conn.execute("SELECT count(*) FROM jobs").fetchone()[0]


def test_202_comes_after_the_job_is_committed(live, conn):
    with live.client() as http:
        response = http.post("/v1/jobs", json={"kind": "noop", "payload": {"n": 1}},
                             headers=auth(11))
    assert response.status_code == 202
    body = response.json()
    assert response.headers["location"] == f"/v1/jobs/{body['id']}"
    assert response.headers["retry-after"] == "1"
    assert body == {"id": body["id"], "state": "pending",
                    "links": {"self": f"/v1/jobs/{body['id']}",
                              "events": f"/v1/jobs/{body['id']}/events"}}
    # Another session sees the job at once: it was committed before the answer was sent.
    row = conn.execute("SELECT tenant_id, kind, payload, state FROM jobs WHERE id = %s",
                       [body["id"]]).fetchone()
    assert row == (1, "noop", {"n": 1}, "pending")


def test_retry_after_follows_a_later_start(live):
    with live.client() as http:
        response = http.post("/v1/jobs", json={"kind": "noop", "run_after": 30.5},
                             headers=auth(11))
    assert response.status_code == 202 and response.headers["retry-after"] == "31"


def test_202_is_not_success_the_status_says_what_happened(live, conn):
    with live.client() as http:
        job_id = http.post("/v1/jobs", json={"kind": "noop"}, headers=auth(11)).json()["id"]
        first = http.get(f"/v1/jobs/{job_id}", headers=auth(11))
        assert first.status_code == 200 and first.headers["retry-after"] == "1"
        assert {k: first.json()[k] for k in ("state", "attempts", "last_error", "output")} == {
            "state": "pending", "attempts": 0, "last_error": None, "output": None}
        claim = jobs.claim(conn, lease=30, worker="test")
        assert http.get(f"/v1/jobs/{job_id}", headers=auth(12)).json()["state"] == "running"
        jobs.finish(conn, claim, {"answer": 42})
        done = http.get(f"/v1/jobs/{job_id}", headers=auth(11))
    assert done.json()["state"] == "done" and done.json()["output"] == {"answer": 42}
    assert "retry-after" not in done.headers, "a final job needs no more polling"


def test_an_idempotency_key_returns_the_same_job_and_never_a_second(live, conn):
    request = {"kind": "noop", "payload": {"upload": 7}}
    with live.client() as http:
        first = http.post("/v1/jobs", json=request, headers=auth(11) | {"Idempotency-Key": "u-7"})
        again = http.post("/v1/jobs", json=request, headers=auth(12) | {"Idempotency-Key": "u-7"})
        other = http.post("/v1/jobs", json={"kind": "noop", "payload": {"upload": 8}},
                          headers=auth(11) | {"Idempotency-Key": "u-7"})
        # Keys are per tenant: tenant 2 gets its own job under the same key.
        elsewhere = http.post("/v1/jobs", json=request, headers=auth(20) | {"Idempotency-Key": "u-7"})
    assert first.status_code == again.status_code == elsewhere.status_code == 202
    assert again.json()["id"] == first.json()["id"] != elsewhere.json()["id"]
    assert again.headers["location"] == first.headers["location"]
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
    assert count_jobs(conn) == 2


def test_header_keys_cannot_collide_with_business_keys(live, conn):
    business = jobs.submit(conn, tenant_id=1, kind="noop", payload={}, idempotency_key="k")
    with live.client() as http:
        response = http.post("/v1/jobs", json={"kind": "noop"},
                             headers=auth(11) | {"Idempotency-Key": "k"})
    assert response.json()["id"] != business


@pytest.mark.parametrize("body, status, code", [
    (b"{not json", 400, "malformed_json"),
    (b"[1, 2]", 422, "invalid_job"),
    (json.dumps({"kind": "nope"}).encode(), 422, "unknown_kind"),
    (json.dumps({"payload": {}}).encode(), 422, "invalid_job"),
    (json.dumps({"kind": "noop", "payload": [1]}).encode(), 422, "invalid_job"),
    (json.dumps({"kind": "noop", "max_attempts": 0}).encode(), 422, "invalid_job"),
    (json.dumps({"kind": "noop", "max_attempts": True}).encode(), 422, "invalid_job"),
    (json.dumps({"kind": "noop", "run_after": "2026-01-01T00:00:00"}).encode(), 422, "invalid_job"),
    (json.dumps({"kind": "noop", "priority": 1}).encode(), 422, "invalid_job"),
    (json.dumps({"kind": "noop", "payload": {"x": "y" * MAX_PAYLOAD_BYTES}}).encode(), 413,
     "payload_too_large"),
    (b" " * (MAX_BODY_BYTES + 1), 413, "content_too_large"),
])
def test_a_bad_request_gets_a_clear_json_error_and_writes_nothing(live, conn, body, status, code):
    with live.client() as http:
        response = http.post("/v1/jobs", content=body,
                             headers=auth(11) | {"Content-Type": "application/json"})
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert (problem["status"], problem["code"]) == (status, code)
    assert problem["detail"] and problem["title"]
    assert count_jobs(conn) == 0


def test_the_kind_check_is_the_queues_own(live, conn):
    with live.client() as http:
        detail = http.post("/v1/jobs", json={"kind": "nope"}, headers=auth(11)).json()["detail"]
    with pytest.raises(Exception) as direct:
        jobs.submit(conn, tenant_id=1, kind="nope", payload={})
    assert detail == str(direct.value)
