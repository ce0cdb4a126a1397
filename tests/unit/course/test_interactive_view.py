"""course.views.interactive: the notebook's HTML view, its static twin and a saved page all
come from one chart."""

from __future__ import annotations

from cachequeue.course.views import interactive
from cachequeue.course.views.eventlanes import Chart, Mark, Span


def test_html_static_and_page_come_from_the_same_chart(tmp_path):
    chart = Chart("运行", [Span("w1", 0, 1, "done"), Span("w2", 0.5, 2, "expired")],
                  [Mark("w1", 1.5, "", "refused", detail="迟到的结果")])
    shown = interactive.html(chart)
    assert shown.data.count('class="span ') == 2 and "迟到的结果" in shown.data
    ax = interactive.static(chart).axes[0]
    assert {t.get_text() for t in ax.get_yticklabels()} == {"w1", "w2"}
    page = interactive.save(chart, tmp_path / "run.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and shown.data in page
