"""cachequeue.laneshtml: the interactive view of a lane chart is well-formed HTML, shows every
lane and every event, loads nothing from anywhere, escapes text, and is deterministic."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from cachequeue import laneshtml
from cachequeue.lanes import Band, Chart, Mark, Span

VOID = {"br", "img", "meta", "input", "hr", "link"}


class Tags(HTMLParser):
    """Checks that every element is closed in order; keeps the elements' attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.elements: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def chart(n=40):
    spans = [Span(f"w{i % 4}", i * 0.5, i * 0.5 + 1.2, "done" if i % 3 else "expired",
                  detail=f"job {i}") for i in range(n)]
    marks = [Mark(f"w{i % 4}", i * 0.5 + 1.3, "", "refused", detail=f"late report {i}")
             for i in range(0, n, 5)] + [Mark("w1", 3.0, "kill <w1>", "kill")]
    return Chart("运行 <历史> & 见证", spans, marks, [Band(5, 6, "重启", "restart"), Band(9, 9)],
                 stack=True, lane_labels={"w0": "工作者 0"})


def parse(html):
    tags = Tags()
    tags.feed(html)
    tags.close()
    assert tags.stack == [], f"unclosed: {tags.stack}"
    return tags


def test_the_html_is_well_formed_and_shows_every_lane_and_every_event():
    shown = chart()
    tags = parse(laneshtml.to_html(shown))
    classes = [attrs.get("class", "") for _, attrs in tags.elements]
    assert sum(c.startswith("span ") for c in classes) == len(shown.spans)
    assert sum(c.startswith("mark ") for c in classes) == len(shown.marks)
    assert classes.count("band") == len(shown.bands)
    lanes = [t for (tag, attrs), t in zip(tags.elements, tags.text, strict=False)
             if attrs.get("class") == "lane"]
    text = "".join(tags.text)
    assert all(shown.label(lane) in text for lane in shown.order()), lanes
    infos = {attrs["data-info"] for _, attrs in tags.elements if "data-info" in attrs}
    assert {f"job {i}" for i in range(40)} <= infos and "late report 35" in infos


def test_it_works_offline_and_escapes_text():
    html = laneshtml.to_html(chart())
    assert not re.search(r"https?:", html), "no URL of any kind: nothing to load"
    assert not re.search(r"\b(src|href)=", html)
    assert "<历史>" not in html and "&lt;历史&gt;" in html and "kill &lt;w1&gt;" in html
    assert html.count("<script>") == 1


def test_the_same_chart_gives_the_same_bytes_and_another_chart_another_id():
    assert laneshtml.to_html(chart()) == laneshtml.to_html(chart())
    ids = {re.search(r'id="(lanes-[0-9a-f]+)"', laneshtml.to_html(c))[1] for c in (chart(), chart(8))}
    assert len(ids) == 2


def test_a_bad_width_is_refused():
    with pytest.raises(ValueError):
        laneshtml.to_html(chart(), width=10)
    with pytest.raises(TypeError):
        laneshtml.to_html(chart(), width="wide")
