"""The course site, built from the committed notebooks and read in a real headless Chromium.

One build (tools/sitebuild.py, into build/site/, the session's `site` fixture) and one
browser session serve every test here: each page is loaded once, in sequence, and what the
browser saw is kept (console errors, requests, links, images, accessibility findings, the
web fonts, the chapter text, a screenshot of its first screen in build/site-shots/, of the
whole page with SITE_SHOTS=full). The tests then assert on that record. Without chromium
the browser tests skip (make test prints one line saying so); the build itself is checked
either way.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import browser
import nbtool
import pytest
import sitebuild
from fontTools.ttLib import TTFont

ROOT = sitebuild.ROOT
SITE = ROOT / "build" / "site"
SHOTS = ROOT / "build" / "site-shots"
FULL_SHOTS = os.environ.get("SITE_SHOTS") == "full"  # whole pages, not the first screen
SERIOUS = {"serious", "critical"}
SEARCHES = ("租约", "租约令牌", "退避", "请求合并")
FONT_FAMILY = "Course Sans SC"
# Text that only the theme's furniture shows (the mode switcher, the page's table of
# contents, the previous/next links) or the download box: never part of a search snippet.
FURNITURE = ("System Settings", "亮色", "上一页", "下一页", "下载本章", "教师版（含答案")


@pytest.fixture(scope="module")
def chapters(site):
    """The real site's chapters, in order (built once per session)."""
    return site[1]


def test_every_notebook_is_a_chapter_page_with_its_downloads(chapters):
    assert [ch.path for ch in chapters] == nbtool.notebook_paths()
    for ch in chapters:
        assert (SITE / ch.page).is_file(), ch.page
        names = {Path(ch.download(kind)).name for kind in sitebuild.DOWNLOADS}
        assert len(names) == 2, f"{ch.stem}: both copies download under one name"
        for kind in sitebuild.DOWNLOADS:
            assert (SITE / ch.download(kind)).is_file()
    index = (SITE / "index.html").read_text(encoding="utf-8")
    for ch in chapters:
        assert f'href="{ch.page}"' in index, f"the chapter table has no link to {ch.page}"
        for kind in sitebuild.DOWNLOADS:
            assert f'href="{ch.download(kind)}"' in index


def test_every_chapter_has_a_reading_time_and_the_total_counts_them_all(chapters):
    assert [ch.stem for ch in chapters if ch.minutes is None] == []
    index = (SITE / "index.html").read_text(encoding="utf-8")
    total = sum(ch.minutes for ch in chapters)
    assert f"合计约 {total} 分钟" in index
    optional = sum(ch.optional_minutes for ch in chapters)
    assert (f"另有选读 {optional} 分钟" in index) == (optional > 0)
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", index, re.DOTALL)
    assert not any(">—<" in row for row in rows), "a chapter row shows no reading time"


def test_no_page_shows_a_test_runner_marker(chapters):
    for page in sitebuild.pages(SITE):
        text = (SITE / page).read_text(encoding="utf-8")
        assert not re.search(r"#\s*NBVAL_", re.sub(r"<[^>]+>", "", text)), page


def test_the_web_font_covers_every_character_the_site_shows(chapters):
    chars = sitebuild.site_characters(SITE)
    source = TTFont(sitebuild.pylopdf_font()).getBestCmap()
    cmap = TTFont(SITE / sitebuild.FONT).getBestCmap()
    missing = sorted(c for c in chars if ord(c) in source and ord(c) not in cmap)
    assert missing == []
    assert {"租", "约", "，", "。"} <= {chr(code) for code in cmap}
    assert len(cmap) < len(source) / 5, "the font is cut down to what the site uses"
    assert "SIL OPEN FONT LICENSE" in (SITE / sitebuild.FONT_LICENCE).read_text(encoding="utf-8")


def test_the_built_site_loads_nothing_from_outside(chapters):
    assert sitebuild.external_assets(SITE) == []


def test_student_downloads_hold_no_answers_and_no_outputs(chapters):
    for ch in chapters:
        nb = nbtool.nbformat.read(SITE / ch.download("student"), as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(c.outputs == [] and c.execution_count is None for c in code)
        assert not any(nbtool.BEGIN in c.source for c in code), ch.path.name


# --- what the browser sees ------------------------------------------------------------


@dataclass
class Visit:
    """What one page did while it loaded in Chromium."""

    url: str
    console_errors: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # local responses >= 400, failed loads
    links: list[str] = field(default_factory=list)  # every href on the page, absolute
    ids: set[str] = field(default_factory=set)
    images: list[dict] = field(default_factory=list)
    output_images: int = 0  # images inside notebook cell outputs
    violations: list[dict] = field(default_factory=list)
    text: str = ""
    article: str = ""  # the chapter text: the article without the download box
    fonts: dict[str, str] = field(default_factory=dict)  # web font family -> status
    body_font: str = ""  # the computed font-family of the page's text


@dataclass
class Crawl:
    base: str
    visits: dict[str, Visit]  # by path relative to the site, e.g. "chapters/03_x.html"
    outside: list[str]  # requests that tried to leave the local server
    search: dict[str, list[str]]  # query -> pages found
    snippets: dict[str, list[tuple[str, str]]]  # query -> (page, snippet shown under it)
    statuses: dict[str, int]  # internal link or image target -> HTTP status


def _visit(page, url: str) -> Visit:
    visit = Visit(url)
    on_console = lambda msg: msg.type == "error" and visit.console_errors.append(msg.text)  # noqa: E731
    on_error = lambda exc: visit.console_errors.append(f"pageerror: {exc}")  # noqa: E731
    on_response = lambda r: r.status >= 400 and visit.failed.append(f"{r.status} {r.url}")  # noqa: E731
    on_failed = lambda r: visit.failed.append(f"failed {r.url}: {r.failure}")  # noqa: E731
    listeners = {"console": on_console, "pageerror": on_error, "response": on_response,
                 "requestfailed": on_failed}
    for event, listener in listeners.items():
        page.on(event, listener)
    try:
        page.goto(url, wait_until="load")
        visit.links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        visit.ids = set(page.eval_on_selector_all("[id]", "els => els.map(e => e.id)"))
        visit.images = page.eval_on_selector_all(
            "img", "els => els.map(e => ({src: e.currentSrc || e.src, width: e.naturalWidth,"
                   " alt: e.getAttribute('alt')}))")
        visit.output_images = page.eval_on_selector_all(
            ".cell_output img", "els => els.filter(e => e.naturalWidth > 0).length")
        visit.text = page.inner_text("body")
        visit.article = page.evaluate(
            "() => { const a = document.querySelector('article.bd-article'); if (!a) return '';"
            " const c = a.cloneNode(true);"
            " c.querySelectorAll('.chapter-links, .headerlink').forEach(e => e.remove());"
            " return c.textContent; }")
        visit.fonts = page.evaluate(
            "async () => { await document.fonts.ready; const found = {};"
            " document.fonts.forEach(f => { found[f.family.replace(/\"/g, '')] = f.status; });"
            " return found; }")
        visit.body_font = page.evaluate("getComputedStyle(document.body).fontFamily")
    finally:
        for event, listener in listeners.items():
            page.remove_listener(event, listener)
    # After the listeners: axe fetches stylesheets itself (and resolves their @import against
    # the page, not the sheet), which is axe's traffic, not the page's.
    visit.violations = browser.accessibility_violations(page)
    return visit


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def _link_statuses(base: str, visits: dict[str, Visit]) -> dict[str, int]:
    """HTTP status of every internal link and image target (fragments aside), fetched once."""
    targets = {url.partition("#")[0] for visit in visits.values()
               for url in visit.links + [img["src"] for img in visit.images]
               if url.startswith(base)}
    return {url: _status(url) for url in sorted(targets)}


@pytest.fixture(scope="module")
def crawl(chapters):
    if browser.chromium() is None:
        pytest.skip(browser.SKIP_LINE)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for old in [*SHOTS.glob("*.png"), *SHOTS.glob("*.jpg")]:
        old.unlink()
    with browser.serve(SITE) as base, browser.launch() as context:
        outside: list[str] = []

        def keep_local(route):
            url = route.request.url
            if url.startswith(base) or url.startswith(("data:", "blob:")):
                route.continue_()
            else:
                outside.append(url)
                route.abort()

        context.route("**/*", keep_local)
        page = context.new_page()
        visits = {}
        for rel in sitebuild.pages(SITE):
            visits[rel] = _visit(page, base + rel)
            # The first screen, what a reader meets; SITE_SHOTS=full takes whole pages (a
            # chapter is 10-27k pixels tall: a third of the crawl's time, for a look by eye).
            page.screenshot(path=SHOTS / (rel.removesuffix(".html").replace("/", "_") + ".jpg"),
                            full_page=FULL_SHOTS, type="jpeg", quality=70)
        search, snippets = {}, {}
        for query in SEARCHES:
            page.goto(base + "search.html?q=" + urllib.parse.quote(query), wait_until="load")
            page.wait_for_function(  # the summary is filled in when the search has finished
                "document.querySelector('#search-results .search-summary')?.textContent",
                timeout=15_000)
            search[query] = [link.removeprefix(base).partition("#")[0] for link in
                             page.eval_on_selector_all("#search-results ul.search li a",
                                                       "els => els.map(e => e.href)")]
            page.wait_for_function(  # snippets arrive one by one, after the summary
                "[...document.querySelectorAll('#search-results ul.search li')]"
                ".every(li => li.querySelector('p.context'))", timeout=15_000)
            snippets[query] = [
                (href.removeprefix(base).partition("#")[0], text) for href, text in
                page.eval_on_selector_all(
                    "#search-results ul.search li",
                    "els => els.map(e => [e.querySelector('a').href,"
                    " e.querySelector('p.context').textContent])")]
        page.close()
        statuses = _link_statuses(base, visits)
    return Crawl(base, visits, outside, search, snippets, statuses)


def test_every_page_loaded_with_no_console_error(crawl):
    assert len(crawl.visits) >= 3
    errors = {rel: v.console_errors for rel, v in crawl.visits.items() if v.console_errors}
    assert errors == {}


def test_no_request_left_the_local_server(crawl):
    assert crawl.outside == []


def test_every_local_request_succeeded(crawl):
    failed = {rel: v.failed for rel, v in crawl.visits.items() if v.failed}
    assert failed == {}


def test_every_internal_link_and_image_answers_200(crawl):
    assert len(crawl.statuses) > len(crawl.visits), "the pages link to each other and to downloads"
    assert {url: code for url, code in crawl.statuses.items() if code != 200} == {}
    missing = []  # links to an anchor that the target page does not have
    for rel, visit in crawl.visits.items():
        for url in visit.links:
            target, _, fragment = url.removeprefix(crawl.base).partition("#")
            if url.startswith(crawl.base) and fragment and target in crawl.visits \
                    and urllib.parse.unquote(fragment) not in crawl.visits[target].ids:
                missing.append(f"{rel} -> {target}#{fragment}")
    assert missing == []
    broken = {rel: [i["src"] for i in v.images if i["width"] == 0]
              for rel, v in crawl.visits.items() if any(i["width"] == 0 for i in v.images)}
    assert broken == {}


def test_every_chapter_page_shows_its_figures_with_a_text_alternative(chapters, crawl):
    for ch in chapters:
        visit = crawl.visits[ch.page]
        assert visit.output_images == ch.figures, ch.page
        assert all(img["alt"] for img in visit.images), ch.page
        assert ch.title.split()[-1] in visit.text


def _prose(path) -> str:
    nb = nbtool.public_copy(nbtool.nbformat.read(path, as_version=4))
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def test_search_finds_every_chapter_that_uses_a_chinese_term(chapters, crawl):
    for query, found in crawl.search.items():
        using = {ch.page for ch in chapters if query in _prose(ch.path)}
        assert using, f"no chapter uses {query!r}: pick another query"
        assert using <= set(found), f"{query!r}: found {found}, expected at least {sorted(using)}"
    lease = next(ch.page for ch in chapters if ch.number == "03")
    assert lease in crawl.search["租约"]


def _words(text: str) -> str:
    return " ".join(text.split())


def test_search_snippets_quote_the_chapter_text_and_no_page_furniture(crawl):
    assert sum(map(len, crawl.snippets.values())) >= len(SEARCHES)
    for query, found in crawl.snippets.items():
        for page, snippet in found:
            assert not [f for f in FURNITURE if f in snippet], (query, page, snippet)
            quoted = _words(snippet.removeprefix("...").removesuffix("..."))
            assert quoted and quoted in _words(crawl.visits[page].article), (query, page, snippet)


def test_every_page_draws_its_text_in_the_bundled_chinese_font(crawl):
    for rel, visit in crawl.visits.items():
        assert visit.fonts.get(FONT_FAMILY) == "loaded", (rel, visit.fonts)
        assert visit.body_font.strip('"').startswith(FONT_FAMILY), (rel, visit.body_font)


def test_accessibility_scan_finds_nothing_serious(crawl):
    report = {rel: [v for v in visit.violations if v["impact"] in SERIOUS]
              for rel, visit in crawl.visits.items()}
    (SHOTS / "axe.json").write_text(json.dumps(
        {rel: visit.violations for rel, visit in crawl.visits.items()}, ensure_ascii=False,
        indent=1), encoding="utf-8")
    assert {rel: found for rel, found in report.items() if found} == {}


def test_a_screenshot_per_page(crawl):
    shots = sorted(p.name for p in SHOTS.glob("*.jpg"))
    assert len(shots) == len(crawl.visits)
    assert all((SHOTS / name).stat().st_size > 5_000 for name in shots)
