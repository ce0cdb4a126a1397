"""Bearer tokens and tenants over HTTP: 401 without a valid token, 404 (never 403) for another
tenant's job on status and on events, the app's finer rule for summaries, and no token in
any log line or answer."""

import logging

import pytest
from servicekit import USERS, auth

from cachequeue.queue import jobs


@pytest.mark.parametrize("headers, code", [
    ({}, "missing_token"),
    ({"Authorization": "Basic dXNlcjpwYXNz"}, "malformed_token"),
    ({"Authorization": "Bearer"}, "malformed_token"),
    ({"Authorization": "Bearer two tokens"}, "malformed_token"),
    ({"Authorization": "Bearer cq11-0000000000000000"}, "invalid_token"),
    ({"Authorization": "Bearer " + USERS[11]["token"][:-1]}, "invalid_token"),
])
def test_no_valid_token_is_a_401_with_a_bearer_challenge(live, headers, code):
    with live.client() as http:
        for method, path in [("GET", "/v1/jobs/1"), ("GET", "/v1/jobs/1/events"),
                             ("POST", "/v1/jobs"), ("GET", "/v1/documents")]:
            response = http.request(method, path, headers=headers)
            assert response.status_code == 401, (method, path)
            assert response.json()["code"] == code
            assert response.headers["www-authenticate"].startswith('Bearer realm="cachequeue"')


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
