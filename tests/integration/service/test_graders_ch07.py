"""Chapter 07's grader against a live service: wrong `missed_events` answers fail with
their message, right ones that differ from the reference pass, twice; stale state is
reported as such."""

from __future__ import annotations

import json

import pytest
from httpx_sse import SSEError, connect_sse
from servicekit import auth

from cachequeue.course.graders import ch07
from cachequeue.queue import jobs


@pytest.fixture
def exercise(live, conn):
    """Han Mei's job on document 44 and Li Lei's on 42, both done; Zhao Lv is tenant 2."""
    with live.client() as http:
        welcome = http.post("/v1/documents/44/summaries", headers=auth(12)).json()["id"]
        english = http.post("/v1/documents/42/summaries", json={"template": "brief-en"},
                            headers=auth(11)).json()["id"]
    for _ in range(2):
        jobs.finish(conn, jobs.claim(conn, lease=30), {"summary": "ok"})
    cases = dict(job=welcome, headers=auth(12), second_job=english, second_headers=auth(11),
                 foreign_job=welcome, foreign_headers=auth(20))
    with live.client() as http:
        yield http, cases


def reference(client, job_id, headers, last_seen):
    resume = headers | {"Last-Event-ID": str(last_seen)}
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events", headers=resume) as source:
        if source.response.status_code == 204:
            return []
        return [(int(sse.id), sse.event) for sse in source.iter_sse()]


def explicit_status(client, job_id, headers, last_seen):
    """Another right answer: a copy of the headers, raise_for_status, a loop."""
    request_headers = dict(headers)
    request_headers["Last-Event-ID"] = f"{last_seen}"
    found = []
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events",
                     headers=request_headers) as source:
        if source.response.status_code == 204:
            return found
        source.response.raise_for_status()
        for event in source.iter_sse():
            found.append((int(event.id), event.event))
    return found


def ignores_204(client, job_id, headers, last_seen):
    resume = headers | {"Last-Event-ID": str(last_seen)}
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events", headers=resume) as source:
        return [(int(sse.id), sse.event) for sse in source.iter_sse()]


def string_ids(client, job_id, headers, last_seen):
    resume = headers | {"Last-Event-ID": str(last_seen)}
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events", headers=resume) as source:
        if source.response.status_code == 204:
            return []
        return [(sse.id, sse.event) for sse in source.iter_sse()]


def changes_headers(client, job_id, headers, last_seen):
    headers["Last-Event-ID"] = str(last_seen)
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events", headers=headers) as source:
        if source.response.status_code == 204:
            return []
        return [(int(sse.id), sse.event) for sse in source.iter_sse()]


def passes_headers_on(client, job_id, headers, last_seen):
    """Filters on the client, and hands the caller's mapping to connect_sse, which adds
    Accept and Cache-Control to it."""
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events", headers=headers) as source:
        return [(int(s.id), s.event) for s in source.iter_sse() if int(s.id) > last_seen]


def no_resume_header(client, job_id, headers, last_seen):
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events", headers=dict(headers)) as source:
        return [(int(sse.id), sse.event) for sse in source.iter_sse()]


def swallows_404(client, job_id, headers, last_seen):
    resume = headers | {"Last-Event-ID": str(last_seen)}
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events", headers=resume) as source:
        if source.response.status_code != 200:
            return []
        return [(int(sse.id), sse.event) for sse in source.iter_sse()]


def int_header(client, job_id, headers, last_seen):
    resume = headers | {"Last-Event-ID": last_seen}
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events", headers=resume) as source:
        if source.response.status_code == 204:
            return []
        return [(int(sse.id), sse.event) for sse in source.iter_sse()]


def one_too_far(client, job_id, headers, last_seen):
    return reference(client, job_id, headers, last_seen + 1)


def bare_return(client, job_id, headers, last_seen):
    resume = headers | {"Last-Event-ID": str(last_seen)}
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events", headers=resume) as source:
        if source.response.status_code == 204:
            return
        return [(int(sse.id), sse.event) for sse in source.iter_sse()]


def state_names(client, job_id, headers, last_seen):
    resume = headers | {"Last-Event-ID": str(last_seen)}
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events", headers=resume) as source:
        if source.response.status_code == 204:
            return []
        return [(int(sse.id), json.loads(sse.data)["state"]) for sse in source.iter_sse()]


def generator(client, job_id, headers, last_seen):
    return (pair for pair in reference(client, job_id, headers, last_seen))


def swallows_sse_errors(client, job_id, headers, last_seen):
    resume = headers | {"Last-Event-ID": str(last_seen)}
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events", headers=resume) as source:
        try:
            return [(int(sse.id), sse.event) for sse in source.iter_sse()]
        except SSEError:
            return []


@pytest.mark.parametrize("answer", [reference, explicit_status])
def test_right_answers_pass_twice(exercise, answer):
    http, cases = exercise
    for _ in range(2):
        assert ch07.check_missed_events(answer, http, **cases) == "检查通过"


@pytest.mark.parametrize(("answer", "message"), [
    (ignores_204, "last_seen=3 时函数抛出 SSEError.*服务此时返回 204"),
    (string_ids, "编号应当是整数"),
    (changes_headers, "调用方传进来的 headers 被改动了"),
    (passes_headers_on, r"headers 被改动了（多了 \['Accept', 'Cache-Control'\]）"),
    (no_resume_header, r"last_seen=1 之后应是 \[\(2, 'started'\), \(3, 'done'\)\]"),
    (swallows_404, "别的租户的任务必须报错"),
    (swallows_sse_errors, r"别的租户的任务必须报错（服务返回 404），不能当作“没有新事件”：实际返回 \[\]"),
    (int_header, "last_seen=0 时函数抛出 TypeError: Header value must be str or bytes"),
    (one_too_far, r"last_seen=0 之后应是 \[\(1, 'accepted'\), \(2, 'started'\), \(3, 'done'\)\]，实际是 \[\(2, "),
    (bare_return, "应当返回列表，last_seen=3 时实际返回 NoneType：None"),
    (state_names, r"实际是 \[\(1, 'pending'\), \(2, 'running'\), \(3, 'done'\)\]"),
    (generator, "应当返回列表，last_seen=0 时实际返回 generator"),
])
def test_wrong_answers_fail_with_their_message(exercise, answer, message):
    http, cases = exercise
    for _ in range(2):
        with pytest.raises(AssertionError, match=message):
            ch07.check_missed_events(answer, http, **cases)


def test_stale_state_is_not_blamed_on_the_answer(exercise):
    http, cases = exercise
    with pytest.raises(AssertionError, match="先重新运行上面准备第 6 节"):
        ch07.check_missed_events(reference, http, **(cases | {"job": 9999}))
