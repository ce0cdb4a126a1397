"""tools/sitebuild.py on synthetic chapters: what a new notebook gets without any code change,
what never reaches the site (instructor cells, test-runner markers), its Chinese web font,
and the offline check that can fail."""

from __future__ import annotations

import base64
import io

import nbformat
import pytest
import sitebuild
from fontTools.ttLib import TTFont
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

MARK = "INSTRUCTOR-ONLY-5c1e"


def _png() -> str:
    fig = Figure(figsize=(2, 1))
    fig.subplots().plot([0, 1], [1, 0])
    buffer = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buffer)
    return base64.b64encode(buffer.getvalue()).decode()


def _cell(kind, source, tags=(), outputs=()):
    cell = (nbformat.v4.new_markdown_cell if kind == "md" else nbformat.v4.new_code_cell)(source)
    if tags:
        cell.metadata["tags"] = list(tags)
    if kind == "code":
        cell.outputs = list(outputs)
    return cell


def _chapter(number: str, title: str, time: str = "25 分钟") -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata.kernelspec = {"name": "cachequeue", "display_name": "Python (cachequeue)",
                              "language": "python"}
    nb.metadata.language_info = {"name": "python"}
    out = nbformat.v4.new_output
    nb.cells = [
        _cell("md", f"# {number} {title}\n\n一段说明。\n\n**预计时间**：{time}。"),
        _cell("md", f"讲师提示：先让学员猜一猜（{MARK}）。", ["instructor"]),
        _cell("code", f"print('{MARK}')", ["instructor"],
              [out("stream", name="stdout", text=f"{MARK}\n")]),
        _cell("md", "## 1. 一张图\n\n上限按 $\\min(\\text{cap}, b \\cdot 2^{n-1})$ 增长：\n\n"
                    "$$d(n) \\sim \\text{Uniform}(0, c(n))$$"),
        _cell("code", "fig", outputs=[out("display_data", data={
            "image/png": _png(), "text/plain": "<Figure size 200x100 with 1 Axes>"})]),
        _cell("code", "def answer():\n    ### BEGIN SOLUTION\n    return 42\n    ### END SOLUTION",
              ["solution"]),
        _cell("code", "assert answer() == 42", ["check"]),
        _cell("code", "# NBVAL_IGNORE_OUTPUT\nprint('耗时随机器而变')", outputs=[
            out("stream", name="stdout", text="耗时随机器而变\n")]),
    ]
    return nb


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    notebooks = root / "notebooks"
    notebooks.mkdir()
    for number, slug, title, time in [("00", "intro", "开始", "25 分钟"),
                                      ("07", "service_api", "服务接口",
                                       "核心部分 25 分钟，选读另需 10 分钟")]:
        nbformat.write(_chapter(number, title, time), notebooks / f"{number}_{slug}.ipynb")
    glossary = root / "glossary.md"
    glossary.write_text("# 术语表\n\n租约（lease）：领取任务时得到的期限。\n", encoding="utf-8")
    out = root / "site"
    chapters = sitebuild.build(out, notebooks=sorted(notebooks.glob("*.ipynb")), glossary=glossary)
    return out, chapters


def test_a_new_notebook_becomes_a_page_a_table_row_and_two_downloads(built):
    out, chapters = built
    assert [(ch.number, ch.title, ch.minutes, ch.optional_minutes, ch.figures)
            for ch in chapters] == [("00", "00 开始", 25, 0, 1), ("07", "07 服务接口", 25, 10, 1)]
    index = (out / "index.html").read_text(encoding="utf-8")
    assert 'href="chapters/07_service_api.html"' in index and "服务接口" in index
    assert "25 分钟（另有选读 10 分钟）" in index and "合计约 50 分钟（另有选读 10 分钟）" in index
    for kind in ("student", "instructor"):
        assert (out / "downloads" / kind / f"07_service_api_{kind}.ipynb").is_file()
        assert f'href="downloads/{kind}/07_service_api_{kind}.ipynb"' in index
        assert (out / "downloads" / f"{kind}.zip").is_file()
    assert (out / "glossary.html").is_file() and "术语表" in index


def test_reading_times_as_chapters_write_them():
    assert sitebuild.reading_time("**预计时间**：50 分钟。") == (50, 0)
    assert sitebuild.reading_time("**预计时间**：约 30 分钟。") == (30, 0)
    assert sitebuild.reading_time(
        "**预计时间**：核心部分 40 分钟，选读另需 20 分钟。") == (40, 20)
    assert sitebuild.reading_time(
        "**预计时间**：60 分钟（整本笔记本运行约两分钟）。下一句 5 分钟") == (60, 0)
    assert sitebuild.reading_time("没有写时间。") == (None, 0)


def test_test_runner_markers_reach_no_page_but_stay_in_the_downloads(built):
    out, _ = built
    page = (out / "chapters" / "07_service_api.html").read_text(encoding="utf-8")
    assert "耗时随机器而变" in page and "NBVAL" not in page
    instructor = (out / "downloads" / "instructor" / "07_service_api_instructor.ipynb")
    assert "# NBVAL_IGNORE_OUTPUT" in instructor.read_text(encoding="utf-8")
    assert sitebuild.without_test_markers("# NBVAL_SKIP\nx = 1  # NBVAL_ in a comment\n") == \
        "x = 1  # NBVAL_ in a comment\n"


def test_the_web_font_holds_the_characters_of_these_pages_only(built):
    out, _ = built
    cmap = {chr(code) for code in TTFont(out / sitebuild.FONT).getBestCmap()}
    assert set("服务接口开始术语表显示参考答案") <= cmap
    assert "龘" not in cmap and len(cmap) < 2000  # no character the pages do not show
    css = (out / "_static" / "course.css").read_text(encoding="utf-8")
    assert 'url("fonts/course-sans-sc.woff2")' in css
    assert (out / sitebuild.FONT_LICENCE).is_file()


def test_instructor_cells_reach_no_page_and_no_download(built):
    out, _ = built
    served = [p for p in out.rglob("*") if p.is_file() and p.suffix in (".html", ".ipynb", ".js")]
    assert served
    assert [p.name for p in served if MARK in p.read_text(encoding="utf-8")] == []


def test_answers_are_folded_and_formulas_are_mathml(built):
    out, _ = built
    page = (out / "chapters" / "07_service_api.html").read_text(encoding="utf-8")
    folded = page[page.index("<details"):page.index("</details>")]
    assert "显示参考答案" in folded and "BEGIN SOLUTION" in folded
    assert page.count("<math") == 2 and "$$" not in page
    assert 'alt="图（1. 一张图）：上限按（公式）增长"' in page
    assert 'href="../downloads/student/07_service_api_student.ipynb"' in page
    student = (out / "downloads" / "student" / "07_service_api_student.ipynb").read_text(
        encoding="utf-8")
    assert "return 42" not in student and "NotImplementedError" in student


def test_the_offline_check_finds_an_asset_from_outside(built, tmp_path):
    out, _ = built
    assert sitebuild.external_assets(out) == []
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "page.html").write_text(
        '<link rel="stylesheet" href="https://cdn.example.org/x.css">'
        '<script src="//cdn.example.org/x.js"></script><a href="https://www.postgresql.org/">ok</a>'
        '<style>@font-face { src: url("https://fonts.example.org/f.woff2"); }</style>',
        encoding="utf-8")
    (tmp_path / "a" / "site.css").write_text("@import url(http://cdn.example.org/y.css);")
    assert sitebuild.external_assets(tmp_path / "a") == [
        "page.html: https://cdn.example.org/x.css", "page.html: //cdn.example.org/x.js",
        "page.html: https://fonts.example.org/f.woff2", "site.css: http://cdn.example.org/y.css"]


def test_a_notebook_without_a_title_cell_is_refused(tmp_path):
    nb = _chapter("08", "无标题")
    nb.cells[0].source = "没有标题"
    path = tmp_path / "08_untitled.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(ValueError, match="title"):
        sitebuild.chapter(path)
    with pytest.raises(ValueError, match="NN_slug"):
        sitebuild.chapter(tmp_path / "notes.ipynb")


@pytest.mark.parametrize(("heading", "prose", "alt"), [
    ("3. 租约", "## 3. 租约\n\n画在时间轴上：`slow` 的租约在第 30 秒结束。后面的话。",
     "图（3. 租约）：画在时间轴上：slow 的租约在第 30 秒结束。"),
    ("2. 链接", "见[第 03 章](03.ipynb)的图", "图（2. 链接）：见第 03 章的图"),
    ("数据库时钟 `cq_now()`", "读数。", "图（数据库时钟 cq_now()）：读数。"),
    ("1. 只有标题", "## 1. 只有标题", "本节的图：1. 只有标题"),
    ("长", "长" * 400, "图（长）：" + "长" * (sitebuild.ALT_LIMIT - 1) + "…"),
])
def test_a_figure_is_described_by_the_sentence_before_it(heading, prose, alt):
    assert sitebuild.figure_alt(heading, prose) == alt
