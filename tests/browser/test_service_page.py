"""The service's page in a real headless Chromium: pick a user and a document, submit, see
已受理 (accepted) while no worker runs, reload and reopen the tab and find the job again,
then see 已完成 (done) with the summary once a worker has run it. No console error, and no
request leaves 127.0.0.1.

And what learners met before (issue 19): a new job starts on a clean card (nothing of the
previous job's 已完成 or steps, not even for a moment); after a reload the form is put
back and the card names the document and template of its job; a repeated request says
that it got the earlier job; the English template writes English."""

import uuid
from urllib.parse import urlsplit

import pytest

from cachequeue import db
from cachequeue.course.app import summaries
from cachequeue.course.app.documents import DocumentStore
from cachequeue.course.app.summariser import summarise_text
from cachequeue.course.procs.stack import Stack

pytestmark = pytest.mark.db  # the service needs PostgreSQL


@pytest.fixture
def stack(database_url):
    """The service (it creates its schema on first start) and, later, a worker."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with Stack(schema) as s:
        s.start_api(access_log=False, demo=True)
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
    assert page.url.endswith(f"#job={job_id}&user=11&document=42&version=3&template=brief-zh")
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


def test_without_demo_mode_the_page_says_how_to_start_it(browser, database_url):
    schema = f"t_{uuid.uuid4().hex[:12]}"
    seen = watch(browser)
    try:
        with Stack(schema) as s:
            s.start_api(access_log=False)  # no --demo: /demo/users is not served
            page = browser.new_page()
            page.goto(s.api.url + "/")
            page.wait_for_selector("#problem:not([hidden])")
            text = page.text_content("#problem")
    finally:
        with db.connect() as conn:
            db.drop_schema(conn, schema)
    assert "演示模式没有开启" in text and "--demo" in text
    assert page.locator("#user option").count() == 0
    # The one console error is the browser's own note of the 404 it was answered.
    assert all("404" in error for error in seen["errors"]), seen["errors"]


# Every state of the job card the page goes through, as a MutationObserver sees it: after
# each task, before the browser paints, so whatever a person could glimpse is recorded.
RECORD_CARD = """() => {
  window.cards = [];
  const $ = (id) => document.getElementById(id);
  const take = () => window.cards.push({
    job: $("job-id").textContent, state: $("state").textContent,
    reached: ["accepted", "running", "done"].filter((s) => $(`step-${s}`).hasAttribute("data-reached")),
    result: !$("result").hidden, events: $("events").children.length });
  new MutationObserver(take).observe($("job"), {subtree: true, childList: true, attributes: true,
                                                characterData: true});
}"""


def submit(page, user: str, document: str, template: str = "brief-zh") -> str:
    """Choose, submit, wait until the card shows the job the service answered with."""
    page.select_option("#user", user)
    page.wait_for_function(f"[...document.querySelectorAll('#document option')]"
                           f".some(o => o.value === '{document}')")
    page.select_option("#document", document)
    page.select_option("#template", template)
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.click("#submit")
    job = str(answer.value.json()["id"])
    page.wait_for_function(f"document.getElementById('job-id').textContent === '#{job}'"
                           " && document.querySelector('#events li') !== null")
    return job


def test_a_new_job_starts_on_a_clean_card(browser, stack):
    page = browser.new_page()
    page.goto(stack.api.url + "/")
    worker = stack.start("w1")
    first = submit(page, "11", "42")
    page.wait_for_selector("#result:not([hidden])")
    worker.terminate()  # the next job stays accepted: whatever looks further along is stale
    assert worker.wait() == 0
    page.evaluate(RECORD_CARD)
    second = submit(page, "11", "44")
    page.wait_for_function("document.getElementById('state').dataset.state === 'pending'")
    cards = page.evaluate("window.cards")
    assert second != first
    ours = [c for c in cards if c["job"] == f"#{second}"]
    assert ours, cards
    stale = [c for c in ours if c["state"] == "已完成" or {"running", "done"} & set(c["reached"])
             or c["result"]]
    assert stale == [], f"the new job's card showed the old job's progress: {stale}"
    assert ours[-1]["state"] == "已受理，等待工作者" and ours[-1]["reached"] == ["accepted"]


def test_a_reload_puts_the_form_back_and_the_card_names_its_job(browser, stack):
    page = browser.new_page()
    page.goto(stack.api.url + "/")
    job = submit(page, "11", "44", "brief-en")
    assert page.text_content("#job-for") == "新人入职指南（第 1 版） · 英文摘要"
    page.select_option("#document", "42")  # the form moves on; the card stays with its job
    page.select_option("#template", "brief-zh")
    page.reload()
    page.wait_for_selector("#events li")
    for shown in (page, None):
        if shown is None:  # the tab closed and opened again: localStorage remembers
            page.close()
            page = browser.new_page()
            page.goto(stack.api.url + "/")
            page.wait_for_selector("#events li")
        assert page.text_content("#job-id") == f"#{job}"
        assert page.text_content("#job-for") == "新人入职指南（第 1 版） · 英文摘要"
        assert (page.input_value("#user"), page.input_value("#document"),
                page.input_value("#template")) == ("11", "44", "brief-en")


def test_a_repeated_request_says_it_got_the_earlier_job(browser, stack):
    page = browser.new_page()
    page.goto(stack.api.url + "/")
    first = submit(page, "11", "42")  # 李雷
    assert page.locator("#repeat").is_hidden()
    again = submit(page, "12", "42")  # 韩梅 asks for the same summary
    assert again == first
    page.wait_for_selector("#repeat:not([hidden])")
    notice = page.text_content("#repeat")
    assert "没有新建任务" in notice and f"第 {first} 号任务" in notice
    other = submit(page, "12", "42", "brief-en")  # another template: a new job, no notice
    assert other != first and page.locator("#repeat").is_hidden()


def test_the_english_template_writes_english(browser, stack):
    page = browser.new_page()
    page.goto(stack.api.url + "/")
    stack.start("w1")
    submit(page, "11", "42", "brief-en")
    page.wait_for_selector("#result:not([hidden])")
    result = page.text_content("#result")
    assert result.isascii(), f"the English summary is not English: {result}"
    assert result == summaries.english_brief(DocumentStore.from_sample().body(42, 3))
    assert page.text_content("#job-for") == "季度路线图（第 3 版） · 英文摘要"
