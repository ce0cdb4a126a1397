"""The capstone probes of chapter 12 that need no database: a right answer and typical wrong
ones give different facts, so a check cell asserting on the facts can tell them apart."""

from __future__ import annotations

import asyncio

import pytest

from cachequeue.cache import cache_key
from cachequeue.course.app.access import view_of
from cachequeue.course.labs import capstone


def right_key(store, user_id, document_id, template):
    view = store.authorize(user_id, document_id)
    document = store.document(document_id)
    return cache_key(tenant=document.tenant_id, document=document.id, version=document.version,
                     viewer=view, template=template)


def key_without_check(store, user_id, document_id, template):
    document = store.document(document_id)
    return cache_key(tenant=document.tenant_id, document=document.id, version=document.version,
                     viewer=view_of(store.user(user_id)), template=template)


def key_by_user(store, user_id, document_id, template):
    store.authorize(user_id, document_id)
    document = store.document(document_id)
    return cache_key(tenant=document.tenant_id, document=document.id, version=document.version,
                     viewer=f"user-{user_id}", template=template)


def test_probe_key_of_a_right_answer():
    facts = capstone.probe_key(right_key)
    assert facts["dimensions"] == {"tenant": 1, "document": 42, "version": 3,
                                   "viewer": "member", "template": "brief-zh"}
    assert facts["members_share"] and facts["admin_apart"] and facts["template_apart"]
    assert facts["other_tenant"] == facts["admins_only"] == facts["deleted"] == "PermissionDenied"
    assert "v=4" in facts["new_version"]


def test_probe_key_sees_a_missing_check_and_a_per_user_view():
    unchecked = capstone.probe_key(key_without_check)
    assert unchecked["admins_only"] != "PermissionDenied"
    assert not capstone.probe_key(key_by_user)["members_share"]


def test_outcome_names_the_exception():
    assert capstone.outcome(lambda: 1) == 1
    assert capstone.outcome(lambda: {}["x"]) == "KeyError"


def test_max_jitter_draws_the_top_of_the_range():
    assert capstone.MaxJitter().uniform(0.0, 4.0) == 4.0


async def right_read(cache, store, user_id, document_id, template, load):
    key = right_key(store, user_id, document_id, template)
    document = store.document(document_id)
    return await cache.get_or_load(key, lambda: load(document.id, document.version, template),
                                   ttl=600)


async def read_without_cache(cache, store, user_id, document_id, template, load):
    store.authorize(user_id, document_id)
    document = store.document(document_id)
    return await load(document.id, document.version, template)


async def read_checked_on_load_only(cache, store, user_id, document_id, template, load):
    document = store.document(document_id)
    key = key_without_check(store, user_id, document_id, template)

    async def checked():
        store.authorize(user_id, document_id)
        return await load(document.id, document.version, template)

    return await cache.get_or_load(key, checked, ttl=600)


def test_probe_read_of_a_right_answer():
    facts = asyncio.run(capstone.probe_read(right_read))
    assert facts["loads_together"] == 1 and len(set(facts["together"])) == 1
    assert facts["together"][0] == "summary of 42 v3 (brief-zh)"
    assert (facts["admin_loaded"], facts["member_again_loaded"]) == (1, 0)
    assert (facts["admins_only"], facts["admins_only_loaded"]) == ("PermissionDenied", 0)
    assert facts["after_revocation"] == "PermissionDenied"
    assert facts["new_version_load"] == (42, 4, "brief-zh")
    assert facts["failed_then_retried"] == ["RuntimeError", "summary of 44 v1 (brief-zh)"]
    assert facts["loads_of_44"] == 2


def test_probe_read_sees_no_coalescing_and_a_check_on_load_only():
    assert asyncio.run(capstone.probe_read(read_without_cache))["loads_together"] == 5
    late = asyncio.run(capstone.probe_read(read_checked_on_load_only))
    assert late["after_revocation"] == "summary of 42 v3 (brief-zh)"


@pytest.mark.parametrize("probe", [capstone.probe_key])
def test_probes_refuse_what_is_not_callable(probe):
    with pytest.raises(TypeError):
        probe("summary_key")


class StubResponse:
    def __init__(self, body):
        self.body = body

    def json(self):
        return self.body

    def raise_for_status(self):
        return None


class StubService:
    """Answers like the course's service: job 7 for any summary request, done with `output`."""

    def __init__(self, state="done", version=3):
        self.state, self.version, self.sent = state, version, []

    def post(self, url, *, json, headers):
        self.sent.append(("POST", url, json, headers))
        return StubResponse({"id": 7, "state": "pending"})

    def get(self, url, *, headers):
        self.sent.append(("GET", url, None, headers))
        output = {"version": self.version, "summary": "摘要"} if self.state == "done" else None
        return StubResponse({"state": self.state, "output": output, "last_error": "boom"})


def test_service_loader_posts_follows_and_reads_the_output():
    followed = []
    service = StubService()
    loader = capstone.ServiceLoader(service, {"Authorization": "Bearer x"},
                                    lambda client, job, headers: followed.append(job))
    assert asyncio.run(loader(42, 3, "brief-en")) == "摘要"
    assert followed == [7] and loader.jobs == [7]
    assert service.sent == [
        ("POST", "/v1/documents/42/summaries", {"template": "brief-en"},
         {"Authorization": "Bearer x"}),
        ("GET", "/v1/jobs/7", None, {"Authorization": "Bearer x"})]


@pytest.mark.parametrize(("service", "message"), [
    (StubService(state="failed"), "job 7 ended failed: boom"),
    (StubService(version=4), "job 7 summarised version 4, not 3"),
])
def test_service_loader_refuses_what_must_not_be_cached(service, message):
    loader = capstone.ServiceLoader(service, {}, lambda client, job, headers: None)
    with pytest.raises(RuntimeError, match=message):
        asyncio.run(loader(42, 3, "brief-zh"))
