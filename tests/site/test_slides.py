"""tools/slides.py: the slide structure derived from a notebook without slide metadata, the
author's own slide metadata left alone, and the deck working offline in a real Chromium:
the title slide fits the screen, a slide taller than the screen scrolls with the keys, no
test-runner marker is shown."""

from __future__ import annotations

import browser
import nbformat
import nbtool
import pytest
import slides

SHOTS = slides.ROOT / "build" / "slides-shots"  # the first slide of each deck, for review
LONG = "这一段是给学习者读的叙述，讲清楚为什么要这样做、在什么条件下成立、又有哪些代价；" * 3


def _md(source, tags=(), slide_type=None):
    cell = nbformat.v4.new_markdown_cell(source)
    if tags:
        cell.metadata["tags"] = list(tags)
    if slide_type:
        cell.metadata["slideshow"] = {"slide_type": slide_type}
    return cell


def _code(source, slide_type=None):
    cell = nbformat.v4.new_code_cell(source)
    shown = slides.without_test_markers(source)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"ran {shown}\n")]
    if slide_type:
        cell.metadata["slideshow"] = {"slide_type": slide_type}
    return cell


def _synthetic():
    nb = nbformat.v4.new_notebook()
    nb.metadata.kernelspec = {"name": "cachequeue", "display_name": "Python (cachequeue)",
                              "language": "python"}
    nb.cells = [
        _md(f"# 99 合成章节\n\n{LONG}\n\n**学习目标**\n- 第一条\n- 第二条"),
        _code("# NBVAL_IGNORE_OUTPUT\nsetup = 1"),
        _md(f"## 1. 第一节\n\n{LONG}\n\n先看第一步："),
        _code("step_one = 1"),
        _md(f"{LONG}\n\n再看第二步，公式 $2^{{n-1}}$："),
        _code("step_two = 2"),
        _md("讲师提示：这里停一下，请学员先猜（INSTRUCTOR）。", tags=["instructor"]),
        _code("step_three = 3"),
        _md("### 1.1 小节\n\n$$d(n) \\sim U(0, c(n))$$"),
        _md(f"作者自己定的片段，不拆分。\n\n{LONG}", slide_type="fragment"),
        _code("hidden = 0", slide_type="skip"),
        _md("## 小结\n\n- 一\n- 二\n\n<details><summary>参考答案</summary>\n\n1. 答案\n\n</details>"),
    ]
    return nb


def _outline(nb):
    return [(c.metadata["slideshow"]["slide_type"], c.source.splitlines()[0][:8]) for c in nb.cells]


def test_headings_start_slides_long_prose_becomes_notes_code_gets_its_own_subslide():
    assert _outline(slides.deck(_synthetic())) == [
        ("slide", "# 99 合成章"),
        ("notes", LONG[:8]),
        ("-", "**学习目标**"),
        ("subslide", "setup = "),  # the set-up code leaves the title slide, markers dropped
        ("slide", "## 1. 第一"),
        ("notes", LONG[:8]),
        ("-", "先看第一步："),
        ("-", "step_one"),
        ("subslide", "再看第二步，公式"),  # the lead-in comes along
        ("-", "step_two"),
        ("notes", LONG[:8]),
        ("subslide", "step_thr"),  # no shown lead-in: the code starts the sub-slide
        ("notes", "讲师提示：这里停"),  # instructor prose is for the speaker
        ("subslide", "### 1.1 "),
        ("-", "<math xm"),
        ("fragment", "作者自己定的片段"),  # explicit metadata: kept whole, as set
        ("skip", "hidden ="),
        ("slide", "## 小结"),
        ("-", "- 一"),
        ("-", "<details"),
    ]
    deck = slides.deck(_synthetic())
    assert "<math" in deck.cells[8].source and "$" not in deck.cells[8].source  # MathML
    assert LONG in deck.cells[15].source  # the explicit cell was not split into notes


def test_blocks_keep_details_and_fences_whole():
    text = "a\n\n<details><summary>答</summary>\n\n1. x\n\n</details>\n\n```\nb\n\nc\n```"
    assert slides.blocks(text) == [
        "a", "<details><summary>答</summary>\n\n1. x\n\n</details>", "```\nb\n\nc\n```"]


def test_an_unknown_chapter_is_refused_with_the_list_of_chapters():
    with pytest.raises(SystemExit, match="CH=NN"):
        slides.chapter_paths("99")


def _load(context, base, name):
    seen = {"errors": [], "outside": [], "failed": []}
    page = context.new_page()
    page.on("console", lambda m: m.type == "error" and seen["errors"].append(m.text))
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("response", lambda r: r.status >= 400 and seen["failed"].append(r.url))
    page.goto(base + name, wait_until="load")
    page.wait_for_function("window.Reveal && Reveal.isReady()", timeout=15_000)
    seen["slides"] = page.evaluate("Reveal.getTotalSlides()")
    seen["notes"] = page.evaluate("document.querySelectorAll('aside.notes').length")
    seen["plugin"] = page.evaluate("!!Reveal.getPlugin('notes')")
    seen["math"] = page.evaluate("document.querySelectorAll('math').length")
    seen["code"] = page.eval_on_selector_all(".jp-CodeCell .jp-InputArea",
                                             "els => els.map(e => e.textContent)")
    seen["sizes"] = page.evaluate(_SIZES)
    seen["font"] = page.evaluate(
        "async () => { await document.fonts.ready; let status = null; document.fonts.forEach("
        "f => { if (f.family.replace(/\"/g, '') === 'Course Sans SC') status = f.status; });"
        " return status; }")
    page.evaluate("Reveal.slide(0, 0)")
    page.screenshot(path=SHOTS / f"{name[:-5]}.png")
    page.close()
    return seen


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    """(folder, synthetic deck, chapter 03's deck): exported once for this module."""
    root = tmp_path_factory.mktemp("slides")
    synthetic = root / "99_synthetic.ipynb"
    nbformat.write(_synthetic(), synthetic)
    lease = next(p for p in nbtool.notebook_paths() if p.name.startswith("03_"))
    out = root / "slides"
    return out, slides.export(synthetic, out), slides.export(lease, out)


def test_decks_work_offline_in_chromium(decks):
    out, _, lease = decks
    assert (out / "reveal" / "dist" / "reveal.js").is_file()
    if browser.chromium() is None:
        pytest.skip(browser.SKIP_LINE)
    SHOTS.mkdir(parents=True, exist_ok=True)
    with browser.serve(out) as base, browser.launch(viewport=(1280, 800)) as context:
        outside = []
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base)
                      else (outside.append(route.request.url), route.abort()))
        small = _load(context, base, "99_synthetic.html")
        chapter = _load(context, base, lease.stem + ".html")
    assert outside == []
    for seen in (small, chapter):
        assert seen["errors"] == [] and seen["failed"] == [] and seen["plugin"]
    # title and its set-up code, "1." with three sub-slides after its first view (step two,
    # step three, 1.1), 小结
    assert (small["slides"], small["notes"], small["math"]) == (7, 4, 2)
    assert chapter["slides"] > 12 and chapter["notes"] > 5
    for seen in (small, chapter):
        assert seen["code"] and not [c for c in seen["code"] if "NBVAL_" in c]
        assert seen["font"] == "loaded"  # the deck's Chinese font
        title = seen["sizes"][0]
        assert title["height"] <= title["screen"] + 2, "the title slide is cut off"


_SIZES = """() => Reveal.getSlides().map((s) => {
  const at = Reveal.getIndices(s);
  Reveal.slide(at.h, at.v);
  const c = Reveal.getCurrentSlide();
  return {h: at.h, v: at.v || 0, height: c.scrollHeight, screen: c.clientHeight};
})"""
_WHERE = """() => { const at = Reveal.getIndices();
  return [at.h, at.v || 0, Reveal.getCurrentSlide().scrollTop]; }"""


def test_a_slide_taller_than_the_screen_scrolls_with_the_keys(decks):
    _, _, deck = decks
    if browser.chromium() is None:
        pytest.skip(browser.SKIP_LINE)
    with browser.serve(deck.parent) as base, browser.launch(viewport=(1280, 800)) as context:
        page = context.new_page()
        page.goto(base + deck.name, wait_until="load")
        page.wait_for_function("window.Reveal && Reveal.isReady()", timeout=15_000)
        sizes = page.evaluate(_SIZES)
        tall = [s for s in sizes if s["height"] > 2 * s["screen"]]
        assert len(tall) >= 2, "chapter 03's claim statement and query plan are 2-3 screens"
        for slide in tall:
            page.evaluate(f"Reveal.slide({slide['h']}, {slide['v']})")
            here = [slide["h"], slide["v"]]
            assert page.evaluate(_WHERE) == [*here, 0]
            tops = [0]
            for key in ["Space", "PageDown", "ArrowDown", "Space", "Space"]:
                page.keyboard.press(key)
                h, v, top = page.evaluate(_WHERE)
                if [h, v] != here:
                    break
                assert top > tops[-1], f"{key} neither scrolled nor moved on"
                tops.append(top)
            else:
                raise AssertionError(f"slide {here} still scrolls after five presses")
            assert len(tops) >= 2  # scrolled at least twice before it moved on
            assert tops[-1] >= slide["height"] - slide["screen"] - 2  # its end was in view
            page.evaluate(f"Reveal.slide({slide['h']}, {slide['v']})")
            page.keyboard.press("PageDown")
            page.keyboard.press("ArrowUp")
            assert page.evaluate(_WHERE) == [*here, 0], "Up scrolls back before it goes back"
            page.keyboard.press("PageUp")
            assert page.evaluate(_WHERE)[:2] != here
