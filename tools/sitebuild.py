"""Build the course site: static HTML from the committed notebooks, offline.

    python tools/sitebuild.py [--out build/site]

Every `notebooks/NN_slug.ipynb` becomes a chapter page (title from its first `# ` heading),
a row of the chapter table on the home page, a student copy and an instructor copy under
`downloads/` (`NN_slug_student.ipynb`, `NN_slug_instructor.ipynb`: two names, so a learner
who downloads both keeps both). Nothing is executed: the pages show the committed outputs,
without the test runner's markers (`# NBVAL_IGNORE_OUTPUT` lines). Cells tagged
`instructor` are dropped from everything the site serves (nbtool.public_copy). Exercise
answers stay on the page, folded behind "显示参考答案". If docs/glossary.md exists, the
site includes it.

After Sphinx, `webfont` writes the Chinese web font: Noto Sans SC (SIL OFL 1.1, from the
`pylopdf-fonts-zh-cn` wheel the library depends on, so it is there wherever the course
is installed) cut down to the characters the built pages use, as `_static/fonts/`
woff2 with its licence beside it. It is made at build time rather than committed so that
a chapter's new characters can never miss from it. Then `external_assets` lists every
asset the pages would fetch from outside the site; the build fails unless that list is
empty.
"""

from __future__ import annotations

import argparse
import html
import importlib.metadata
import re
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbtool  # noqa: E402  (tools/ is not a package)

ROOT = Path(__file__).resolve().parents[1]
SKELETON = Path(__file__).resolve().parent / "site"
DOCS = ROOT / "docs"
REPO_NOTEBOOKS = "my-notebooks"  # where `make lab` puts a learner's own copies (tools/study.py)
_NUMBERED = re.compile(r"(?P<number>\d\d)_(?P<slug>[a-z0-9_]+)\.ipynb")
_TIME = re.compile(r"预计时间\**\s*[:：]\s*(?P<said>[^。\n]*)")
_MINUTES = re.compile(r"(\d+)\s*分钟")
_OPTIONAL = "选读"
# A line that only talks to the test runner (nbval): kept in the notebooks, not shown.
_TEST_MARKER = re.compile(r"^[ \t]*#[ \t]*NBVAL_[A-Z_]+[ \t]*(?:\n|$)", re.MULTILINE)
DOWNLOADS = ("student", "instructor")


@dataclass(frozen=True)
class Chapter:
    """One notebook as the site sees it."""

    path: Path
    number: str
    title: str
    minutes: int | None  # the core of the chapter
    figures: int
    optional_minutes: int = 0  # "选读另需 20 分钟"

    @property
    def stem(self) -> str:
        return self.path.stem

    @property
    def page(self) -> str:
        return f"chapters/{self.stem}.html"

    def download(self, kind: str) -> str:
        """Where the site serves its student or instructor copy, e.g.
        'downloads/student/03_x_student.ipynb' (each copy has a name of its own)."""
        if kind not in DOWNLOADS:
            raise ValueError(f"kind must be one of {DOWNLOADS}, not {kind!r}")
        return f"downloads/{kind}/{self.stem}_{kind}.ipynb"

    @property
    def time(self) -> str:
        """The reading time as the chapter table shows it."""
        if self.minutes is None:
            return "—"
        extra = f"（另有选读 {self.optional_minutes} 分钟）" if self.optional_minutes else ""
        return f"{self.minutes} 分钟{extra}"


def reading_time(first_cell: str) -> tuple[int | None, int]:
    """(core minutes, optional minutes) from the title cell's "**预计时间**：…" sentence:
    "50 分钟" -> (50, 0); "核心部分 40 分钟，选读另需 20 分钟" -> (40, 20); none -> (None, 0).
    Minutes written after "选读" are optional; any other number of minutes is core."""
    said = _TIME.search(first_cell)
    if said is None:
        return None, 0
    text = said["said"]
    cut = text.find(_OPTIONAL)
    core = [int(m[1]) for m in _MINUTES.finditer(text if cut < 0 else text[:cut])]
    optional = [int(m[1]) for m in _MINUTES.finditer(text[cut:])] if cut >= 0 else []
    return (sum(core) if core else None), sum(optional)


def without_test_markers(source: str) -> str:
    """A code cell's source without its `# NBVAL_...` lines (what the test runner reads)."""
    return _TEST_MARKER.sub("", source)


def chapter(path: Path, nb=None) -> Chapter:
    """Read what the site needs from one notebook (the public copy: no instructor cells)."""
    match = _NUMBERED.fullmatch(path.name)
    if not match:
        raise ValueError(f"{path.name}: chapter notebooks are named NN_slug.ipynb")
    nb = nbtool.public_copy(nb or nbformat.read(path, as_version=4))
    first = nb.cells[0] if nb.cells else None
    if first is None or first.cell_type != "markdown" or not first.source.startswith("# "):
        raise ValueError(f"{path.name}: the first cell must be a markdown '# title' cell")
    title = first.source.splitlines()[0][2:].strip()
    minutes, optional = reading_time(first.source)
    figures = sum("image/png" in out.get("data", {})
                  for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs)
    return Chapter(path, match["number"], title, minutes, figures, optional)


def _short_title(ch: Chapter) -> str:
    """The title without its leading chapter number ("03 持久化……" -> "持久化……")."""
    return ch.title[len(ch.number):].strip() if ch.title.startswith(ch.number + " ") else ch.title


def _links_cell(ch: Chapter) -> nbformat.NotebookNode:
    """The box under a chapter's title: the two copies, and how to run it in JupyterLab."""
    name = html.escape(ch.path.name)
    student, instructor = (html.escape(ch.download(kind)) for kind in DOWNLOADS)
    return nbformat.v4.new_markdown_cell(
        '<div class="chapter-links">\n'
        f'<p>下载本章：<a href="../{student}" download>学生版</a>'
        "（答案已移除，没有输出，用来做练习）·"
        f' <a href="../{instructor}" download>教师版</a>'
        "（含答案与本页所示的全部输出）</p>\n"
        f'<p>在自己的电脑上运行：按照<a href="../run.html">运行说明</a>执行 <code>make lab</code>，'
        f"然后在 JupyterLab 中打开你自己的副本 <code>{REPO_NOTEBOOKS}/{name}</code>；"
        "<code>make progress</code> 列出你的练习哪些已经通过。</p>\n"
        "</div>")


_DOCS_LINK = re.compile(r"\]\(\.\./docs/([\w-]+)\.md\)")


def site_copy(nb, ch: Chapter):
    """The chapter as the site shows it: no instructor cells, a download/run box under the
    title, no test-runner markers, answers folded, every figure with a text alternative."""
    copy = nbtool.public_copy(nb)
    copy.cells.insert(1, _links_cell(ch))
    heading, prose = ch.title, ""
    for cell in copy.cells:
        if cell.cell_type == "markdown":
            # A notebook links the repository's docs/x.md; the site has that page at its root.
            cell.source = _DOCS_LINK.sub(r"](../\1.md)", cell.source)
            for line in cell.source.splitlines():
                if line.startswith("#"):
                    heading = line.lstrip("#").strip()
            prose = cell.source
            continue
        cell.source = without_test_markers(cell.source)
        mystnb = cell.metadata.setdefault("mystnb", {})
        if "solution" in nbtool.tags(cell):
            cell.metadata.setdefault("tags", []).append("hide-input")
            mystnb.update(code_prompt_show="显示参考答案", code_prompt_hide="隐藏参考答案")
        if any("image/png" in out.get("data", {}) for out in cell.outputs):
            mystnb.setdefault("image", {"alt": cell.metadata.get("alt") or figure_alt(heading, prose)})
    return copy


_HEADING_LINE = re.compile(r"^#.*$", re.MULTILINE)
_MARKUP = [(re.compile(r"\$\$.*?\$\$", re.DOTALL), ""),            # display formulas
           (re.compile(r"\s*\$[^$]*\$\s*"), "（公式）"),                   # inline formulas
           (re.compile(r"\[([^\]]*)\]\([^)]*\)"), r"\1"),           # links: their text
           (re.compile(r"`|\*\*?"), ""), (re.compile(r"\s+"), " ")]
ALT_LIMIT = 160


def figure_alt(heading: str, prose: str) -> str:
    """A figure's text alternative: its section and the first sentence of the prose just
    before it (which, in this course, says what the figure shows). A cell's own
    metadata `alt` takes precedence."""
    text = _HEADING_LINE.sub("", prose)
    for pattern, replacement in _MARKUP:
        text = pattern.sub(replacement, text)
        heading = pattern.sub(replacement, heading)
    heading = heading.strip()
    sentence = re.split(r"(?<=[。；！？])|[：:]\s*$", text.strip(), maxsplit=1)[0].strip()
    if len(sentence) > ALT_LIMIT:
        sentence = sentence[:ALT_LIMIT - 1] + "…"
    return f"图（{heading}）：{sentence}" if sentence else f"本节的图：{heading}"


def _index_page(chapters: list[Chapter], extra_pages: list[str]) -> str:
    rows = "\n".join(
        f"| {ch.number} | [{_short_title(ch)}]({ch.page.removesuffix('.html')}.ipynb) "
        f"| {ch.time} "
        f'| <a href="{ch.download("student")}" download>学生版</a> · '
        f'<a href="{ch.download("instructor")}" download>教师版</a> |'
        for ch in chapters)
    total = sum(ch.minutes or 0 for ch in chapters)
    optional = sum(ch.optional_minutes for ch in chapters)
    total = f"{total} 分钟" + (f"（另有选读 {optional} 分钟）" if optional else "")
    toctree = "\n".join([*(ch.page.removesuffix(".html") for ch in chapters), *extra_pages])
    return f"""# 缓存、队列与后台任务：PostgreSQL 动手课程

这门课用 Jupyter 笔记本讲两件事：已经算过的结果能否安全地复用（缓存），已经接受的工作由谁、在什么时候可靠地完成（队列与后台任务）。每一章都在真实的 PostgreSQL 上运行，每一个结论都由 `assert` 检验。

本站的每一页都是一章笔记本，连同它提交在仓库中的输出：这些输出由持续集成在 PostgreSQL 18 与 15 上重新运行并逐字比对，所以在这里读到的就是运行时会看到的。想亲手运行，请看[运行说明](run.md)。

## 章节

| 章 | 内容 | 预计时间 | 下载 |
|---|---|---|---|
{rows}

合计约 {total}。学生版去掉了练习答案和所有输出，检查单元格会告诉你答案是否正确；教师版与本站所示相同，含答案与输出。在自己的电脑上，`make lab` 在 `my-notebooks/` 生成你的学习副本并打开 JupyterLab，`make progress` 按章列出你的练习哪些已经通过（见<a href="run.html">运行说明</a>）。全部章节打包下载：<a href="downloads/student.zip" download>学生版（zip）</a> · <a href="downloads/instructor.zip" download>教师版（zip）</a>。

```{{toctree}}
:hidden:
:maxdepth: 1

{toctree}
```
"""


def assemble(src: Path, notebooks: list[Path], *, glossary: Path | None = None) -> list[Chapter]:
    """Write the Sphinx sources into `src` (emptied first); return the chapters in order."""
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(SKELETON, src, ignore=shutil.ignore_patterns("__pycache__"))
    extra = src / "_extra"
    for kind in DOWNLOADS:
        (extra / "downloads" / kind).mkdir(parents=True)
    (src / "chapters").mkdir()
    chapters = []
    for path in sorted(notebooks):
        nb = nbformat.read(path, as_version=4)
        ch = chapter(path, nb)
        chapters.append(ch)
        nbformat.write(site_copy(nb, ch), src / "chapters" / path.name)
        nbformat.write(nbtool.student_copy(nb), extra / ch.download("student"))
        nbformat.write(nbtool.public_copy(nb), extra / ch.download("instructor"))
    if not chapters:
        raise ValueError("no chapter notebooks (NN_slug.ipynb) to build a site from")
    for kind in DOWNLOADS:  # inside a zip, each copy keeps the notebook's own name
        with zipfile.ZipFile(extra / "downloads" / f"{kind}.zip", "w", zipfile.ZIP_DEFLATED) as zf:
            for ch in chapters:
                zf.write(extra / ch.download(kind), f"{kind}/{ch.path.name}")
    extra_pages = ["run"]
    if glossary is not None and glossary.is_file():
        shutil.copyfile(glossary, src / "glossary.md")
        extra_pages.append("glossary")
    (src / "index.md").write_text(_index_page(chapters, extra_pages), encoding="utf-8")
    return chapters


def sphinx(src: Path, out: Path) -> None:
    """Run Sphinx on the assembled sources; warnings are errors (a broken reference fails)."""
    if out.exists():
        shutil.rmtree(out)
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going",
           "-d", str(src / ".doctrees"), str(src), str(out)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"sphinx failed ({result.returncode}):\n{result.stderr}{result.stdout}")


_ASSET_ATTRS = {"script": "src", "img": "src", "iframe": "src", "audio": "src", "video": "src",
                "source": "src", "embed": "src", "object": "data", "track": "src"}
_CSS_URL = re.compile(r"""(?:url\(\s*['"]?|@import\s+['"])([^'")\s]+)""")


def _is_external(url: str) -> bool:
    return bool(re.match(r"^(?:[a-z][a-z0-9+.-]*:)?//", url.strip(), re.IGNORECASE))


class _Assets(HTMLParser):
    """Collects the URLs a page loads by itself (not the links a reader may follow)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []
        self._style = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in _ASSET_ATTRS and attrs.get(_ASSET_ATTRS[tag]):
            self.urls.append(attrs[_ASSET_ATTRS[tag]])
        if tag in ("img", "source") and attrs.get("srcset"):
            self.urls += [part.split()[0] for part in attrs["srcset"].split(",") if part.strip()]
        if tag == "link" and attrs.get("href") and attrs.get("rel", "") not in ("canonical",):
            self.urls.append(attrs["href"])
        if tag == "style":
            self._style = True
        if attrs.get("style"):
            self.urls += _CSS_URL.findall(attrs["style"])

    def handle_endtag(self, tag):
        if tag == "style":
            self._style = False

    def handle_data(self, data):
        if self._style:
            self.urls += _CSS_URL.findall(data)


def external_assets(out: Path) -> list[str]:
    """Every `file: url` by which a page or stylesheet of the built site would load something
    from outside it (scripts, styles, fonts, images, frames, preconnects). [] when offline."""
    found = []
    for page in sorted(out.rglob("*.html")):
        parser = _Assets()
        parser.feed(page.read_text(encoding="utf-8"))
        found += [f"{page.relative_to(out)}: {url}" for url in parser.urls if _is_external(url)]
    for sheet in sorted(out.rglob("*.css")):
        found += [f"{sheet.relative_to(out)}: {url}"
                  for url in _CSS_URL.findall(sheet.read_text(encoding="utf-8", errors="replace"))
                  if _is_external(url)]
    return found


FONT = "_static/fonts/course-sans-sc.woff2"  # course.css names it "Course Sans SC"
FONT_LICENCE = "_static/fonts/OFL.txt"
_FONT_DIST = "pylopdf-fonts-zh-cn"


def pylopdf_font() -> Path:
    """The font the web font is cut from: Noto Sans SC Regular in the pylopdf-fonts-zh-cn
    wheel (a dependency of the library, the same file its figures draw Chinese with)."""
    import pylopdf_fonts_zh_cn

    return Path(pylopdf_fonts_zh_cn.sans_path())


def site_characters(out: Path) -> set[str]:
    """Every character a reader of the built site can be shown: the pages' text (entities
    decoded), the search index (result titles) and Sphinx's translated messages."""
    files = [*out.rglob("*.html"), out / "searchindex.js", out / "_static" / "translations.js"]
    chars: set[str] = set()
    for path in files:
        if path.is_file():
            chars |= set(html.unescape(path.read_text(encoding="utf-8", errors="replace")))
    return {c for c in chars if c.isprintable()}


def webfont(chars: set[str], target: Path, licence: Path) -> set[str]:
    """Noto Sans SC (OFL 1.1, from the pylopdf-fonts-zh-cn wheel) cut down to `chars`,
    written as woff2 to `target`, with the font's licence at `licence`. Returns the
    characters it covers: those of `chars` that Noto Sans SC has."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    font = TTFont(pylopdf_font())
    cmap = font.getBestCmap()
    covered = {c for c in chars if ord(c) in cmap}
    options = subset.Options()
    options.flavor = "woff2"  # needs brotli: the `site` extra installs fonttools[woff]
    options.layout_features = ["*"]  # full-width punctuation forms, vertical metrics
    options.name_IDs = ["*"]  # the copyright and licence notices stay in the font
    options.notdef_outline = True
    cut = subset.Subsetter(options)
    cut.populate(unicodes={ord(c) for c in covered})
    cut.subset(font)
    target.parent.mkdir(parents=True, exist_ok=True)
    subset.save_font(font, str(target), options)
    dist = importlib.metadata.distribution(_FONT_DIST)
    text = dist.read_text("licenses/LICENSE") or dist.read_text("LICENSE") or dist.metadata["License"]
    if not text or "Open Font License" not in text:
        raise RuntimeError(f"{_FONT_DIST}: no SIL Open Font License text to ship with the font")
    licence.write_text("Noto Sans SC, cut down to the characters of this site by "
                       "tools/sitebuild.py (fontTools).\n\n" + text, encoding="utf-8")
    return covered


def pages(out: Path) -> list[str]:
    """Every HTML page of a built site, relative to it (theme macro files in _static/ are not
    pages)."""
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html")
                  if p.relative_to(out).parts[0] != "_static")


def build(out: Path, *, notebooks: list[Path] | None = None, glossary: Path | None = DOCS / "glossary.md",
          src: Path | None = None) -> list[Chapter]:
    """Assemble, run Sphinx, refuse a site that would fetch anything from outside."""
    src = src or out.with_name(out.name + "-src")
    chapters = assemble(src, nbtool.notebook_paths() if notebooks is None else notebooks,
                        glossary=glossary)
    sphinx(src, out)
    webfont(site_characters(out), out / FONT, out / FONT_LICENCE)
    outside = external_assets(out)
    if outside:
        raise RuntimeError("the site would load assets from outside itself:\n" + "\n".join(outside))
    return chapters


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    out = args.out.resolve()
    chapters = build(out)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"built {len(chapters)} chapters, {len(pages(out))} pages, {size / 1e6:.1f} MB "
          f"in {time.perf_counter() - started:.1f} s: {out}/index.html")
    for page in pages(out):
        print(f"  {page:45} {(out / page).stat().st_size / 1e3:7.1f} kB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
