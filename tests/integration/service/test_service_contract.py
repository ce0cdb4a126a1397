"""What the service promises about its own interface (issue 18, item 9): strict ids and
content types, OPTIONS, the OpenAPI document of bodies and problems, Idempotency-Key
bounds and reuse, kinds no worker runs, and shedding under overload."""

import threading
import time

import httpx
import pytest
from servicekit import auth, wait_until

from cachequeue.queue import jobs
from cachequeue.service.requests import MAX_KEY_CHARS


def count_jobs(conn) -> int:
    return conn.execute("SELECT count(*) FROM jobs").fetchone()[0]


@pytest.mark.parametrize("text", ["+1", "01", "1.0", " 1", "0x1", "1e0", "٣"])
def test_an_id_is_plain_digits(live, conn, text):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    with live.client() as http:
        assert http.get("/v1/jobs/1", headers=auth(11)).status_code == 200
        answer = http.get(f"/v1/jobs/{text}", headers=auth(11))
        document = http.post(f"/v1/documents/{text.replace('1', '42')}/summaries",
                             headers=auth(11))
    assert answer.status_code in (404, 422) and document.status_code in (404, 422)
    assert answer.headers["content-type"] == "application/problem+json"
    assert count_jobs(conn) == 1


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "application/jsonx", "multipart/form-data"])
def test_a_job_is_sent_as_json(live, conn, content_type):
    headers = auth(11) | ({} if content_type is None else {"Content-Type": content_type})
    with live.client() as http:
        answer = http.post("/v1/jobs", content=b'{"kind": "noop"}', headers=headers)
        summary = http.post("/v1/documents/42/summaries", content=b'{"template": "brief-en"}',
                            headers=headers)
    assert (answer.status_code, answer.json()["code"]) == (415, "unsupported_media_type")
    assert summary.status_code == 415
    assert count_jobs(conn) == 0


def test_options_names_the_methods_of_the_path(live):
    with live.client() as http:
        jobs_path = http.options("/v1/jobs")
        job = http.options("/v1/jobs/7")
        nowhere = http.options("/v1/nowhere")
        wrong = http.delete("/v1/jobs")
    assert (jobs_path.status_code, jobs_path.headers["allow"]) == (204, "OPTIONS, POST")
    assert job.headers["allow"] == "GET, OPTIONS"
    assert nowhere.status_code == 404
    assert (wrong.status_code, wrong.headers["allow"]) == (405, "POST")
    assert wrong.headers["content-type"] == "application/problem+json"


def test_the_openapi_document_has_the_bodies_and_the_problems(live):
    with live.client() as http:
        spec = http.get("/openapi.json").json()
    submit = spec["paths"]["/v1/jobs"]["post"]
    body = submit["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["kind"] and set(body["properties"]) == {
        "kind", "payload", "max_attempts", "run_after"}
    for status in ("400", "401", "404", "413", "415", "422", "503"):
        assert "application/problem+json" in submit["responses"][status]["content"], status
    summaries = spec["paths"]["/v1/documents/{document_id}/summaries"]["post"]
    assert "requestBody" in summaries and "403" in summaries["responses"]
    assert "404" in spec["paths"]["/v1/jobs/{job_id}"]["get"]["responses"]


def test_an_idempotency_key_may_be_as_long_as_the_header_allows(live, conn):
    with live.client() as http:
        longest = http.post("/v1/jobs", json={"kind": "noop"},
                            headers=auth(11) | {"Idempotency-Key": "k" * MAX_KEY_CHARS})
        longer = http.post("/v1/jobs", json={"kind": "noop"},
                           headers=auth(11) | {"Idempotency-Key": "k" * 200})
    assert longest.status_code == 202
    assert (longer.status_code, longer.json()["code"]) == (400, "bad_idempotency_key")
    assert f"at most {MAX_KEY_CHARS} characters" in longer.json()["detail"]
    assert count_jobs(conn) == 1


def test_a_key_reused_for_another_request_is_refused(live, conn):
    key = {"Idempotency-Key": "upload-9"}
    first = {"kind": "noop", "max_attempts": 3, "run_after": 30}
    with live.client() as http:
        accepted = http.post("/v1/jobs", json=first, headers=auth(11) | key)
        repeat = http.post("/v1/jobs", json=first, headers=auth(11) | key)
        attempts = http.post("/v1/jobs", json=first | {"max_attempts": 5}, headers=auth(11) | key)
        later = http.post("/v1/jobs", json=first | {"run_after": 3600}, headers=auth(11) | key)
    assert accepted.status_code == repeat.status_code == 202
    assert repeat.json()["id"] == accepted.json()["id"]
    for answer in (attempts, later):
        assert (answer.status_code, answer.json()["code"]) == (422, "idempotency_key_reused")
    assert count_jobs(conn) == 1


def test_a_kind_no_worker_runs_is_refused_when_the_service_knows_its_workers(make_live, conn):
    live = make_live(worker_kinds=["noop", "summarise"])
    with live.client() as http:
        flaky = http.post("/v1/jobs", json={"kind": "flaky"}, headers=auth(11))
        noop = http.post("/v1/jobs", json={"kind": "noop"}, headers=auth(11))
    assert (flaky.status_code, flaky.json()["code"]) == (422, "no_worker_for_kind")
    assert noop.status_code == 202
    assert count_jobs(conn) == 1


def test_overload_is_shed_at_once_with_retry_after(make_live, conn):
    live = make_live(pool_size=1, max_in_flight=1, pool_timeout=10.0)
    held = live.service.pool.getconn()  # the pool's only connection: the next call waits
    answers = {}

    def first():
        with httpx.Client(base_url=live.url, timeout=30) as http:
            answers["first"] = http.post("/v1/jobs", json={"kind": "noop"}, headers=auth(11))

    waiting = threading.Thread(target=first)
    waiting.start()
    try:
        wait_until(lambda: live.service.in_flight == 1, 10, "the first call is waiting")
        with live.client() as http:
            started = time.monotonic()
            shed = http.post("/v1/jobs", json={"kind": "noop"}, headers=auth(11))
            took = time.monotonic() - started
    finally:
        live.service.pool.putconn(held)
        waiting.join(30)
    assert (shed.status_code, shed.json()["code"]) == (503, "overloaded")
    assert shed.headers["retry-after"] == "1"
    assert took < 2, f"shed after {took:.1f} s; the pool would have waited 10 s"
    assert answers["first"].status_code == 202
    assert count_jobs(conn) == 1
    with live.operator() as ops:
        assert "cq_http_shed_total 1.0" in ops.get("/metrics").text


def test_every_unexpected_error_is_still_a_problem(make_live, monkeypatch):
    live = make_live()

    def broken(*args, **kwargs):
        raise RuntimeError("internal-secret-7")

    monkeypatch.setattr(live.service, "authenticator", broken)
    with httpx.Client(base_url=live.url, timeout=10) as http:
        answer = http.get("/v1/jobs/1", headers=auth(11))
    assert answer.status_code == 500
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == "internal_error"
    assert "internal-secret-7" not in answer.text


def test_the_openapi_document_describes_the_headers_and_the_cancel_route(live):
    with live.client() as http:
        doc = http.get("/openapi.json").json()

    def header(path, method, name):
        (found,) = [p for p in doc["paths"][path][method]["parameters"] if p["name"] == name]
        return found["schema"]

    key = header("/v1/jobs", "post", "Idempotency-Key")
    # On the string itself: beside anyOf [string, null] the bounds described no string.
    assert (key["type"], key["minLength"], key["maxLength"]) == ("string", 1, MAX_KEY_CHARS)
    assert "anyOf" not in key
    resume = header("/v1/jobs/{job_id}/events", "get", "Last-Event-ID")
    assert (resume["type"], resume["pattern"]) == ("string", "^[0-9]{0,18}$")
    assert "anyOf" not in resume
    assert {"200", "404", "409"} <= set(doc["paths"]["/v1/jobs/{job_id}/cancel"]["post"]["responses"])
    assert "429" in doc["paths"]["/v1/jobs"]["post"]["responses"]


def test_the_openapi_document_lists_the_kinds_a_job_may_name(make_live, conn):
    def kind_schema(live):
        with live.client() as http:
            doc = http.get("/openapi.json").json()
        body = doc["paths"]["/v1/jobs"]["post"]["requestBody"]
        return body["content"]["application/json"]["schema"]["properties"]["kind"]

    live = make_live()
    known = [row[0] for row in conn.execute("SELECT kind FROM job_kinds ORDER BY kind")]
    assert kind_schema(live)["enum"] == known and "noop" in known
    conn.execute("INSERT INTO job_kinds (kind, description) VALUES ('later', 'added later')")
    assert "later" in kind_schema(live)["enum"]  # read when asked, not cached at start
    served = make_live(worker_kinds=["noop", "summarise"])
    assert kind_schema(served)["enum"] == ["noop", "summarise"]  # what its workers run
