"""The interactive lane view (cachequeue.laneshtml) in Chromium: served locally with nothing
else, it runs without a console error or a request, zooms on the wheel, pans on a drag,
resets on a double click, and shows an item's details on hover."""

from __future__ import annotations

import browser
import pytest

from cachequeue import laneshtml
from cachequeue.lanes import Band, Chart, Mark, Span


def chart():
    spans = [Span(f"w{i % 3}", i * 0.4, i * 0.4 + 1.0, "done" if i % 4 else "expired",
                  detail=f"任务 {i}") for i in range(30)]
    marks = [Mark("w1", 5.3, "", "refused", detail="迟到的结果被拒绝"), Mark("w2", 2.0, "", "kill")]
    return Chart("运行", spans, marks, [Band(3, 3.5, "重启", "restart")], stack=True)


def test_the_view_zooms_pans_resets_and_shows_details_offline(tmp_path):
    if browser.chromium() is None:
        pytest.skip(browser.SKIP_LINE)
    (tmp_path / "lanes.html").write_text(laneshtml.page(chart()), encoding="utf-8")
    errors, requests = [], []
    with browser.serve(tmp_path) as base, browser.launch() as context:
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(base + "lanes.html", wait_until="load")

        def middle_bar():  # a bar near the middle: it stays in view while zoomed
            return page.eval_on_selector_all("rect.span", "es => [+es[15].getAttribute('x'), "
                                             "+es[15].getAttribute('width')]")

        x0, w0 = middle_bar()
        box = page.query_selector("svg").bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5)
        page.mouse.wheel(0, -300)
        page.wait_for_timeout(100)
        x1, w1 = middle_bar()
        assert w1 > w0 * 1.2, "the wheel zooms in: the bars get wider"
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.5)
        page.mouse.up()
        x2, w2 = middle_bar()
        assert x2 != x1 and abs(w2 - w1) < 1e-6, "a drag pans: same width, another place"
        page.mouse.dblclick(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5)
        assert middle_bar() == pytest.approx((x0, w0), abs=0.5), "a double click resets"
        page.locator("g.mark.refused").hover(force=True)
        assert page.inner_text(".lanes-info") == "迟到的结果被拒绝"
    assert errors == []
    assert [r for r in requests if not r.startswith(base)] == [] and len(requests) == 1
