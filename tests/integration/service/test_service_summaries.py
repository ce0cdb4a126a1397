"""The sample app's summary requests and handler: a repeated request is told that it found an
earlier job (`Idempotent-Replayed: true`), also when two requests race, and the English
template writes English."""

import threading
import uuid
from datetime import UTC, datetime

import pytest
from servicekit import auth

from cachequeue import db
from cachequeue.course.app import summaries
from cachequeue.course.app.documents import DocumentStore
from cachequeue.queue import JobContext
from cachequeue.queue.jobs import Claim


def test_a_repeated_summary_request_says_it_found_the_earlier_job(live):
    with live.client() as http:
        first = http.post("/v1/documents/42/summaries", headers=auth(11))
        colleague = http.post("/v1/documents/42/summaries", headers=auth(12))
        again = http.post("/v1/documents/42/summaries", headers=auth(11))
        other = http.post("/v1/documents/42/summaries", json={"template": "brief-en"},
                          headers=auth(11))
    assert first.json()["id"] == colleague.json()["id"] == again.json()["id"] != other.json()["id"]
    assert "idempotent-replayed" not in first.headers
    assert "idempotent-replayed" not in other.headers
    assert colleague.headers["idempotent-replayed"] == again.headers["idempotent-replayed"] == "true"


def test_of_two_racing_requests_exactly_one_created_the_job(schema):
    store = DocumentStore.from_sample()
    user = store.user(11)
    barrier = threading.Barrier(2)
    got = []

    def ask():
        with db.connect(schema) as conn:
            barrier.wait()
            got.append(summaries.request_summary(conn, store, user, 42))

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(got) == 2 and got[0].job_id == got[1].job_id
    assert sorted(r.created for r in got) == [False, True]


def test_a_summary_request_inside_a_callers_transaction_is_refused(conn):
    store = DocumentStore.from_sample()
    with conn.transaction(), pytest.raises(ValueError, match="outside one"):
        summaries.request_summary(conn, store, store.user(11), 42)
    assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0


def run_handler(template: str) -> dict:
    payload = {"document_id": 42, "version": 3, "template": template}
    claim = Claim(7, 1, "summarise", payload, 1, uuid.uuid4(), datetime.now(UTC), "w", "s")
    return summaries.summarise(payload, JobContext(claim, "w", connect=lambda: None))


def has_cjk(text: str) -> bool:
    return any("\u3000" <= c <= "\u9fff" or "\uff00" <= c <= "\uffef" for c in text)


def test_the_english_template_writes_english_and_the_chinese_one_chinese(monkeypatch):
    monkeypatch.setattr(summaries, "SUMMARY_SECONDS", 0.0)
    english, chinese = run_handler("brief-en")["summary"], run_handler("brief-zh")["summary"]
    body = DocumentStore.from_sample().body(42, 3)  # three clauses, 35 characters
    assert english == summaries.english_brief(body)
    assert english == ("Summary: a Chinese document of 35 characters in 3 points "
                       "(the sample model does not translate).")
    assert english.isascii() and not has_cjk(english)
    assert chinese.startswith("摘要：第一季度完成搜索与权限审计")


@pytest.mark.parametrize("text, points", [("一句话。", 1), ("甲；乙；丙。", 3), ("没有句号", 1),
                                          ("问？答！", 2)])
def test_the_english_brief_counts_points(text, points):
    brief = summaries.english_brief(text)
    assert f" in {points} point{'' if points == 1 else 's'} " in brief and brief.isascii()


@pytest.mark.parametrize("body", [{"template": {}}, {"template": []}, {"template": [1]},
                                  {"template": None}, {"template": 1}])
def test_a_template_that_is_not_a_string_is_a_422_and_writes_nothing(live, schema, body):
    with live.client() as http:
        answer = http.post("/v1/documents/42/summaries", json=body, headers=auth(11))
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert answer.json()["code"] == "invalid_request"
    with db.connect(schema) as conn:
        assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0


def test_summary_template_refuses_unhashable_templates_with_its_422():
    from cachequeue.course.app.webapp import summary_template
    from cachequeue.service.problems import Problem
    for raw in (b'{"template": {}}', b'{"template": []}', b'{"template": [1]}'):
        with pytest.raises(Problem) as caught:
            summary_template(raw)
        assert caught.value.status == 422
