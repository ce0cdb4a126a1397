"""Bearer tokens and tenants over HTTP: 401 or 400 (as RFC 6750 says) without a valid token,
404 (never 403) for another tenant's job on status and on events, the app's finer rule for
summaries, and no token in any log line or answer."""

import logging

import pytest
from servicekit import USERS, auth

from cachequeue.queue import jobs

REALM = 'Bearer realm="cachequeue"'


@pytest.mark.parametrize("headers, status, code, challenge", [
    ({}, 401, "missing_token", REALM),
    ({"Authorization": "Basic dXNlcjpwYXNz"}, 401, "missing_token", REALM),
    ({"Authorization": "Bearer"}, 400, "malformed_token", f'{REALM}, error="invalid_request"'),
    ({"Authorization": "Bearer two tokens"}, 400, "malformed_token",
     f'{REALM}, error="invalid_request"'),
    ({"Authorization": "Bearer cq11-0000000000000000"}, 401, "invalid_token",
     f'{REALM}, error="invalid_token"'),
    ({"Authorization": "Bearer " + USERS[11]["token"][:-1]}, 401, "invalid_token",
     f'{REALM}, error="invalid_token"'),
])
def test_no_valid_token_is_answered_as_rfc_6750_says(live, headers, status, code, challenge):
    # No credentials or another scheme: 401 and a bare challenge; a malformed Bearer
    # credential: 400 invalid_request; a token that is not valid: 401 invalid_token.
    with live.client() as http:
        for method, path in [("GET", "/v1/jobs/1"), ("GET", "/v1/jobs/1/events"),
                             ("POST", "/v1/jobs"), ("GET", "/v1/documents"),
                             ("POST", "/v1/documents/42/summaries")]:
            response = http.request(method, path, headers=headers)
            assert response.status_code == status, (method, path)
            assert response.json()["code"] == code
            assert response.headers["www-authenticate"] == challenge


def test_another_tenants_job_is_not_found_exactly_like_a_missing_one(live, conn):
    theirs = jobs.submit(conn, tenant_id=2, kind="noop", payload={})
    missing = theirs + 1000
    with live.client() as http:
        assert http.get(f"/v1/jobs/{theirs}", headers=auth(20)).status_code == 200
        for path in ("/v1/jobs/{}", "/v1/jobs/{}/events"):
            seen = http.get(path.format(theirs), headers=auth(10))   # tenant 1's admin
            absent = http.get(path.format(missing), headers=auth(10))
            assert seen.status_code == absent.status_code == 404
            assert seen.json() == {**absent.json(), "detail": f"no job {theirs}"}
            assert seen.headers.keys() - {"content-length"} == absent.headers.keys() - {"content-length"}


def test_a_summary_follows_its_documents_permissions(live):
    with live.client() as http:
        admins_only = http.post("/v1/documents/43/summaries", headers=auth(10))
        assert admins_only.status_code == 202
        job = admins_only.json()["id"]
        assert http.get(f"/v1/jobs/{job}", headers=auth(10)).status_code == 200
        # Same tenant, but a member may not read document 43, so not its summary either.
        assert http.get(f"/v1/jobs/{job}", headers=auth(11)).status_code == 404
        assert http.get(f"/v1/jobs/{job}/events", headers=auth(11)).status_code == 404
        assert http.post("/v1/documents/43/summaries", headers=auth(11)).status_code == 403
        assert http.post("/v1/documents/50/summaries", headers=auth(11)).status_code == 404
        assert http.post("/v1/documents/99/summaries", headers=auth(11)).status_code == 404
        member_docs = [d["id"] for d in http.get("/v1/documents", headers=auth(11)).json()]
        admin_docs = [d["id"] for d in http.get("/v1/documents", headers=auth(10)).json()]
    assert (member_docs, admin_docs) == ([42, 44], [42, 43, 44])


def test_one_summary_is_one_job_whoever_asks_and_however_often(live, conn):
    with live.client() as http:
        first = http.post("/v1/documents/42/summaries", headers=auth(11))
        again = http.post("/v1/documents/42/summaries", headers=auth(12))
        english = http.post("/v1/documents/42/summaries", json={"template": "brief-en"},
                            headers=auth(11))
        bad = http.post("/v1/documents/42/summaries", json={"template": "long"}, headers=auth(11))
    assert first.json()["id"] == again.json()["id"] != english.json()["id"]
    assert bad.status_code == 422
    keys = [r[0] for r in conn.execute("SELECT idempotency_key FROM jobs ORDER BY id")]
    assert keys == ["summary:1:42:v3:brief-zh", "summary:1:42:v3:brief-en"]


def test_no_token_ever_reaches_a_log_line_or_an_answer(live, conn, caplog):
    caplog.set_level(logging.DEBUG)
    good, wrong = USERS[11]["token"], "cq99-feedfacefeedface"
    texts = []
    with live.client() as http:
        for token in (good, wrong):
            headers = {"Authorization": f"Bearer {token}"}
            texts.append(http.post("/v1/jobs", json={"kind": "noop"}, headers=headers).text)
            texts.append(http.post("/v1/jobs", content=b"{", headers=headers).text)
            texts.append(http.get("/v1/jobs/1", headers=headers).text)
            texts.append(http.get("/v1/jobs/999/events", headers=headers).text)
            texts.append(http.get("/v1/nowhere", headers=headers).text)
        texts.append(http.get("/v1/jobs/1", headers={"Authorization": f"Token {good}"}).text)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "POST /v1/jobs" in logged, "the access log was captured"
    for token in (good, wrong):
        assert token not in logged
        assert not any(token in text for text in texts)


def test_another_tenants_document_cannot_be_summarised_through_the_jobs_route(live, conn):
    theirs = {"document_id": 42, "version": 3, "template": "brief-zh"}  # tenant 1's
    with live.client() as http:
        cross = http.post("/v1/jobs", json={"kind": "summarise", "payload": theirs},
                          headers=auth(20))
        missing = http.post("/v1/jobs", json={"kind": "summarise",
                                              "payload": theirs | {"document_id": 99}},
                            headers=auth(20))
        documents_route = http.post("/v1/documents/42/summaries", headers=auth(20))
        no_version = http.post("/v1/jobs", json={"kind": "summarise",
                                                 "payload": theirs | {"version": 9}},
                               headers=auth(11))
        admins_only = http.post("/v1/jobs", json={"kind": "summarise", "payload": {
            "document_id": 43, "version": 1, "template": "brief-zh"}}, headers=auth(11))
        own = http.post("/v1/jobs", json={"kind": "summarise", "payload": theirs},
                        headers=auth(11))
    # The same 404 as a missing document, and as the documents route gives tenant 2.
    assert cross.status_code == missing.status_code == documents_route.status_code == 404
    assert cross.json() == documents_route.json() == {**missing.json(), "detail": "no document 42"}
    assert (no_version.status_code, admins_only.status_code) == (422, 403)
    assert own.status_code == 202
    assert conn.execute("SELECT tenant_id, payload FROM jobs").fetchall() == [(1, theirs)]


def test_the_summary_handler_trusts_the_claim_not_the_payload():
    import uuid
    from datetime import UTC, datetime

    from cachequeue.course.app import summaries
    from cachequeue.queue import JobContext, PermanentError
    from cachequeue.queue.jobs import Claim

    payload = {"document_id": 42, "version": 3, "template": "brief-zh"}  # tenant 1's
    claim = Claim(7, 2, "summarise", payload, 1, uuid.uuid4(), datetime.now(UTC), "w", "s")
    with pytest.raises(PermanentError) as refused:
        summaries.summarise(payload, JobContext(claim, "w", connect=lambda: None))
    assert "in this tenant" in str(refused.value)


def test_the_demo_routes_are_served_only_in_demo_mode(make_live):
    plain, demo = make_live(), make_live(demo=True)
    with plain.client() as http:
        hidden = http.get("/demo/users")
        page = http.get("/")
    with demo.client() as http:
        shown = http.get("/demo/users")
    assert hidden.status_code == 404 and page.status_code == 200
    assert shown.status_code == 200 and {u["id"] for u in shown.json()} == set(USERS)
