"""graders.ch12.check_step for the steps that need no database (1, 2, 5): right answers that differ
from the reference pass, realistic wrong ones fail with the message that names their cause,
and a re-run gives the same verdict."""

from __future__ import annotations

import asyncio
import functools
import json

import httpx
import pytest
from httpx_sse import connect_sse

from cachequeue.cache import cache_key
from cachequeue.course.app.access import view_of
from cachequeue.course.graders import ch12
from cachequeue.course.labs import capstone

# --- step 1 -------------------------------------------------------------------------------


def key_other_order(store, user_id, document_id, template):
    document = store.document(document_id)
    view = store.authorize(user_id, document_id)
    return cache_key(template=template, viewer=view, version=document.version,
                     document=document.id, tenant=document.tenant_id)


def key_by_user(store, user_id, document_id, template):
    store.authorize(user_id, document_id)
    d = store.document(document_id)
    return cache_key(tenant=d.tenant_id, document=d.id, version=d.version,
                     viewer=str(user_id), template=template)


def key_without_check(store, user_id, document_id, template):
    d = store.document(document_id)
    return cache_key(tenant=d.tenant_id, document=d.id, version=d.version,
                     viewer=view_of(store.user(user_id)), template=template)


def key_by_hand(store, user_id, document_id, template):
    view = store.authorize(user_id, document_id)
    d = store.document(document_id)
    return f"{d.tenant_id}:{d.id}:{d.version}:{view}:{template}"


def key_with_tpl(store, user_id, document_id, template):
    view = store.authorize(user_id, document_id)
    d = store.document(document_id)
    return cache_key(tenant=d.tenant_id, document=d.id, version=d.version, viewer=view,
                     tpl=template)


def key_without_return(store, user_id, document_id, template):
    view = store.authorize(user_id, document_id)
    d = store.document(document_id)
    cache_key(tenant=d.tenant_id, document=d.id, version=d.version, viewer=view, template=template)


def test_step1_a_right_answer_in_another_shape_passes_twice():
    assert ch12.check_step(1, key_other_order) == ch12.check_step(1, key_other_order) == ch12.PASSED


@pytest.mark.parametrize(("answer", "message"), [
    (key_by_user, "键里的视图是用户 id"),
    (key_without_check, "先调用 store.authorize"),
    (key_by_hand, "自己拼的字符串读不出维度"),
    (key_with_tpl, "维度 template：实际是"),
    (key_without_return, "忘了 return"),
])
def test_step1_wrong_answers_fail_with_their_cause(answer, message):
    for _ in range(2):
        with pytest.raises(AssertionError, match=message):
            ch12.check_step(1, answer)


# --- step 2 -------------------------------------------------------------------------------


async def read_with_partial(cache, store, user_id, document_id, template, load):
    key = key_other_order(store, user_id, document_id, template)
    version = store.document(document_id).version
    return await cache.get_or_load(key, functools.partial(load, document_id, version, template),
                                   ttl=600)


async def read_without_cache(cache, store, user_id, document_id, template, load):
    store.authorize(user_id, document_id)
    return await load(document_id, store.document(document_id).version, template)


async def read_checked_on_load_only(cache, store, user_id, document_id, template, load):
    key = key_without_check(store, user_id, document_id, template)
    version = store.document(document_id).version

    async def checked():
        store.authorize(user_id, document_id)
        return await load(document_id, version, template)

    return await cache.get_or_load(key, checked, ttl=600)


async def read_keyed_by_document(cache, store, user_id, document_id, template, load):
    store.authorize(user_id, document_id)
    version = store.document(document_id).version
    return await cache.get_or_load(f"doc={document_id}", lambda: load(document_id, version, template),
                                   ttl=600)


async def read_swallowing_errors(cache, store, user_id, document_id, template, load):
    key = key_other_order(store, user_id, document_id, template)
    version = store.document(document_id).version

    async def safe():
        try:
            return await load(document_id, version, template)
        except RuntimeError:
            return None

    return await cache.get_or_load(key, safe, ttl=600)


async def read_unwritten(cache, store, user_id, document_id, template, load):
    raise NotImplementedError


def test_step2_a_right_answer_in_another_shape_passes_twice():
    for _ in range(2):
        assert asyncio.run(ch12.check_step(2, read_with_partial)) == ch12.PASSED


@pytest.mark.parametrize(("answer", "message"), [
    (read_without_cache, "实际加载 5 次"),
    (read_checked_on_load_only, "缓存里的旧摘要不能再给成员"),
    (read_keyed_by_document, "管理员读要另加载一次"),
    (read_swallowing_errors, "加载失败时异常交给读者"),
])
def test_step2_wrong_answers_fail_with_their_cause(answer, message):
    for _ in range(2):
        with pytest.raises(AssertionError, match=message):
            asyncio.run(ch12.check_step(2, answer))


def test_step2_the_student_copy_raises_not_implemented_error():
    with pytest.raises(NotImplementedError):
        asyncio.run(ch12.check_step(2, read_unwritten))


# --- step 5: a service that answers like the course's, on httpx's MockTransport ------------

STREAM = "".join(f"event: {event}\ndata: {json.dumps({'id': 5, 'state': state})}\n\n"
                 for event, state in ch12.EVENTS)


def service(request):
    if request.method == "POST" and request.url.path == "/v1/documents/44/summaries":
        return httpx.Response(202, json={"id": 5, "state": "pending"})
    if request.url.path == "/v1/jobs/5/events":
        return httpx.Response(200, text=STREAM, headers={"content-type": "text/event-stream"})
    if request.url.path == "/v1/jobs/5":
        return httpx.Response(200, json={"id": 5, "state": "done", "output": {"document_id": 44}})
    return httpx.Response(404)


@pytest.fixture
def http():
    with httpx.Client(transport=httpx.MockTransport(service), base_url="http://service") as client:
        yield client


def follow_reference(client, job_id, headers):
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events", headers=headers) as source:
        return [(sse.event, json.loads(sse.data)["state"]) for sse in source.iter_sse()]


def follow_by_lines(client, job_id, headers):
    """Another right shape: read the stream's lines by hand."""
    pairs, event = [], None
    with client.stream("GET", f"/v1/jobs/{job_id}/events", headers=headers) as answer:
        for line in answer.iter_lines():
            if line.startswith("event:"):
                event = line.removeprefix("event:").strip()
            elif line.startswith("data:"):
                pairs.append((event, json.loads(line.removeprefix("data:"))["state"]))
    return pairs


def follow_first_only(client, job_id, headers):
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events", headers=headers) as source:
        sse = next(source.iter_sse())
        return [(sse.event, json.loads(sse.data)["state"])]


def follow_raw_data(client, job_id, headers):
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events", headers=headers) as source:
        return [(sse.event, sse.data) for sse in source.iter_sse()]


def follow_plain_get(client, job_id, headers):
    return client.get(f"/v1/jobs/{job_id}/events", headers=headers).json()


@pytest.mark.parametrize("answer", [follow_reference, follow_by_lines])
def test_step5_right_answers_pass_twice(http, answer):
    for _ in range(2):
        assert ch12.check_step(5, answer, http, {}) == ch12.PASSED


@pytest.mark.parametrize(("answer", "message"), [
    (follow_first_only, r"实际是 \[\('accepted', 'pending'\)\]"),
    (follow_raw_data, "不是整段数据"),
    (follow_plain_get, "不是一个 JSON 文档"),
])
def test_step5_wrong_answers_fail_with_their_cause(http, answer, message):
    for _ in range(2):
        with pytest.raises(AssertionError, match=message):
            ch12.check_step(5, answer, http, {})


def test_step5_a_stopped_service_is_named_not_blamed_on_the_answer():
    def refuse(request):
        raise httpx.ConnectError("connection refused", request=request)

    with (httpx.Client(transport=httpx.MockTransport(refuse), base_url="http://service") as client,
          pytest.raises(AssertionError, match="服务已经停了吗")):
        ch12.check_step(5, follow_reference, client, {})


def test_check_refuses_a_step_that_does_not_exist_and_what_is_not_callable():
    with pytest.raises(ValueError, match="step"):
        ch12.check_step(8, key_other_order)
    with pytest.raises(TypeError, match="answer"):
        ch12.check_step(1, "summary_key")
