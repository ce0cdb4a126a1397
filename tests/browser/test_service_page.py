"""The service's page in a real headless Chromium: pick a user and a document, submit, see
已受理 (accepted) while no worker runs, reload and reopen the tab and find the job again,
then see 已完成 (done) with the summary once a worker has run it. No console error, and no
request leaves 127.0.0.1."""

import uuid
from urllib.parse import urlsplit

import pytest

from cachequeue import db
from cachequeue.course.documents import DocumentStore
from cachequeue.course.stack import Stack
from cachequeue.course.summariser import summarise_text

pytestmark = pytest.mark.db  # the service needs PostgreSQL


@pytest.fixture
def stack(database_url):
    """The service (it creates its schema on first start) and, later, a worker."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with Stack(schema) as s:
        s.start_api(access_log=False)
        yield s
    with db.connect() as conn:
        db.drop_schema(conn, schema)


def watch(context):
    """Console errors, page errors and every URL the browser asked for."""
    seen = {"errors": [], "urls": []}
    context.on("request", lambda request: seen["urls"].append(request.url))

    def on_page(page):
        page.on("console", lambda m: m.type == "error" and seen["errors"].append(m.text))
        page.on("pageerror", lambda e: seen["errors"].append(str(e)))

    context.on("page", on_page)
    return seen


def test_submit_accepted_reload_resume_done(browser, stack):
    seen = watch(browser)
    base = stack.api.url
    page = browser.new_page()
    page.goto(base + "/")
    page.select_option("#user", "11")  # 李雷, a member of tenant 1
    page.wait_for_selector("#submit:enabled")
    assert page.locator("#document option").all_text_contents() == [
        "季度路线图（第 3 版）", "新人入职指南（第 1 版）"]
    page.click("#submit")

    # Accepted: persisted, a job id, nothing done yet (no worker is running).
    page.wait_for_selector("#step-accepted[data-reached]")
    job_id = page.text_content("#job-id").lstrip("#")
    assert page.url.endswith(f"#job={job_id}&user=11")
    assert page.locator("#step-done[data-reached]").count() == 0
    assert page.text_content("#state") == "已受理，等待工作者"

    # The tab is reloaded, then closed and opened again: the job is found each time.
    page.reload()
    page.wait_for_selector("#events li")
    assert page.text_content("#job-id") == f"#{job_id}"
    page.close()
    page = browser.new_page()
    page.goto(base + "/")  # no job in the address: localStorage remembers it
    page.wait_for_selector("#events li")
    assert page.text_content("#job-id") == f"#{job_id}"
    assert page.input_value("#user") == "11"

    # A worker starts; the open page follows the job to the end, pushed over SSE.
    stack.start("w1")
    page.wait_for_selector("#step-done[data-reached]")
    page.wait_for_selector("#result:not([hidden])")
    assert page.text_content("#state") == "已完成"
    assert page.locator("#events li").all_text_contents() == [
        "#1 已受理", "#2 开始处理（第 1 次尝试）", "#3 已完成（第 1 次尝试）"]
    body = DocumentStore.from_sample().body(42, 3)
    assert page.text_content("#result") == summarise_text(body, "zh")

    assert seen["errors"] == []
    hosts = {urlsplit(url).hostname for url in seen["urls"] if not url.startswith("data:")}
    assert hosts == {"127.0.0.1"}, sorted(set(seen["urls"]))


def test_a_member_cannot_see_an_admins_only_document(browser, stack):
    page = browser.new_page()
    page.goto(stack.api.url + "/")
    page.select_option("#user", "10")  # 王敏, the admin of tenant 1
    page.wait_for_selector("#submit:enabled")
    admin = page.locator("#document option").all_text_contents()
    page.select_option("#user", "11")
    page.wait_for_function("document.querySelectorAll('#document option').length === 2")
    assert "薪酬调整方案（第 2 版，仅管理员）" in admin
    assert "薪酬调整方案（第 2 版，仅管理员）" not in page.locator("#document option").all_text_contents()
