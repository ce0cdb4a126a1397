"""tools/browser.py's accessibility scan: checking color-contrast once per look of text
finds what axe's full run finds (the site crawl relies on it)."""

from __future__ import annotations

import browser
import pytest

GOOD = '<p style="color:#222">正文 {i}，<code style="color:#333">code_{i}</code>。</p>'
PAGE = """<!doctype html><html lang="zh-CN"><head><meta charset="utf-8"><title>t</title></head>
<body><main><h1>对比度</h1>{good}
<pre style="background:#f8f8f8">{tokens}</pre>
<p style="color:#222">最后一段，前面的样式都见过，只有这个词 <span style="color:#c8c8c8">太浅</span>。</p>
{pale}</main></body></html>"""


def _page(tmp_path, pale: bool) -> str:
    good = "\n".join(GOOD.format(i=i) for i in range(300))
    tokens = "".join(f'<span style="color:#005">t{i}</span> ' for i in range(500))
    extra = "\n".join('<p style="color:#ccc">浅色的重复段落</p>' for _ in range(20)) if pale else ""
    (tmp_path / "page.html").write_text(PAGE.format(good=good, tokens=tokens, pale=extra),
                                        encoding="utf-8")
    return "page.html"


@pytest.mark.parametrize("pale", [False, True])
def test_the_scan_finds_what_the_full_axe_run_finds(tmp_path, pale):
    if browser.chromium() is None:
        pytest.skip(browser.SKIP_LINE)
    from axe_playwright_python.sync_playwright import Axe

    name = _page(tmp_path, pale)
    with browser.serve(tmp_path) as base, browser.launch() as context:
        page = context.new_page()
        page.goto(base + name, wait_until="load")
        fast = browser.accessibility_violations(page)
        full = Axe().run(page).response["violations"]
    assert {v["id"] for v in fast} == {v["id"] for v in full}
    contrast = [v for v in fast if v["id"] == "color-contrast"]
    assert len(contrast) == 1 and contrast[0]["impact"] == "serious"
    # the late pale word, and (once) the repeated pale paragraph
    assert contrast[0]["nodes"] == (2 if pale else 1)
