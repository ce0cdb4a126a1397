"""Slides for presenting a chapter: a reveal.js deck that works offline, with speaker notes.

    python tools/slides.py 03 [--out build/slides] [--serve]     # `make present CH=03`
    python tools/slides.py all                                   # every chapter

The notebooks carry no slide metadata: the structure is derived when the deck is written.
A `#`/`##` heading starts a slide and `###` a vertical sub-slide; a long paragraph of prose
(the narrative a learner reads) becomes a speaker note, while short lead-ins, lists, tables,
formulas and answers stay on the slide; a code cell with its outputs gets a sub-slide of its
own when the slide already shows one, taking the prose that introduces it along, and the
chapter's set-up code (the first code under the `#` title) always gets one, so the title
slide keeps to the title and the learning goals. Markdown cells tagged `instructor` become
speaker notes; instructor code cells stay, for the room. Code is shown without the test
runner's `# NBVAL_...` lines. A cell whose metadata already says `slideshow.slide_type` (as
JupyterLab's property inspector writes it) is left exactly as its author set it. A slide
still taller than the screen scrolls, with Down/Space/PageDown and Up/PageUp too (the
template's `scrollOrGo`), before the deck moves on.

The deck is nbconvert's reveal.js export with an offline template (slide_templates/):
reveal.js 5 and its notes plugin are copied from the sphinx-revealjs wheel next to the deck,
formulas are written as MathML, and Chinese comes from the deck's own font (fonts/NN_x.woff2:
Noto Sans SC cut down to the deck's characters, as the site's is; sitebuild.webfont). Press S in the deck for the speaker view with the notes.
"""

from __future__ import annotations

import argparse
import functools
import html
import re
import shutil
import sys
import threading
import webbrowser
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbtool  # noqa: E402  (tools/ is not a package)
from sitebuild import webfont, without_test_markers  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = Path(__file__).resolve().parent / "slide_templates"
LONG_PROSE = 90  # characters: a paragraph longer than this is read, not shown
_NOT_PROSE = re.compile(r"^\s*(?:[-*+]\s|\d+\.\s|\||<|```|\$\$|>|!\[)")
_DISPLAY_MATH = re.compile(r"\$\$(.+?)\$\$", re.DOTALL)
_INLINE_MATH = re.compile(r"(?<![\\$\w`])\$(?!\s)([^$`\n]+?)(?<!\s)\$(?![\w$])")


def blocks(markdown: str) -> list[str]:
    """Split markdown at blank lines, keeping fenced code and <details> blocks whole."""
    found, current, fence, details = [], [], False, 0
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = not fence
        if not fence:
            details += stripped.count("<details") - stripped.count("</details>")
        if not stripped and not fence and details <= 0 and current:
            found.append("\n".join(current))
            current = []
        elif stripped or current:
            current.append(line)
    if current:
        found.append("\n".join(current))
    return found


def kind(block: str) -> str:
    """'slide' / 'subslide' for headings, 'notes' for long prose, '-' for what stays shown."""
    heading = re.match(r"^(#{1,6})\s", block)
    if heading:
        return "slide" if len(heading[1]) <= 2 else "subslide"
    if len(block) > LONG_PROSE and not any(map(_NOT_PROSE.match, block.splitlines())):
        return "notes"
    return "-"


def mathml(markdown: str) -> str:
    """Formulas as MathML (the deck loads no MathJax)."""
    from latex2mathml.converter import convert

    markdown = _DISPLAY_MATH.sub(lambda m: convert(m[1].strip(), display="block"), markdown)
    return _INLINE_MATH.sub(lambda m: convert(m[1].strip()), markdown)


def _slide_type(cell) -> str:
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-")


def _slide_cell(cell, slide_type: str):
    cell.metadata["slideshow"] = {"slide_type": slide_type}
    return cell


def deck(nb):
    """A copy of `nb` with slide types derived as the module docstring says."""
    out: list = []
    shows_code = False  # the current (sub)slide already shows a code cell
    since_code: int | None = None  # first cell after that code cell (its successor's lead-in)
    on_title = False  # the current slide is the chapter's `#` title slide
    for cell in nbformat.from_dict(nb).cells:
        if cell.cell_type == "code":
            cell.source = without_test_markers(cell.source)
        explicit = cell.get("metadata", {}).get("slideshow", {}).get("slide_type")
        if explicit or cell.cell_type not in ("markdown", "code"):
            out.append(cell)
            if explicit in ("slide", "subslide"):
                shows_code, since_code, on_title = cell.cell_type == "code", None, False
            elif cell.cell_type == "code" and explicit not in ("notes", "skip"):
                shows_code, since_code = True, None
            continue
        if cell.cell_type == "markdown":
            instructor = nbtool.INSTRUCTOR in nbtool.tags(cell)
            for block in blocks(cell.source):
                slide_type = "notes" if instructor else kind(block)
                out.append(_slide_cell(nbformat.v4.new_markdown_cell(mathml(block)), slide_type))
                if slide_type in ("slide", "subslide"):
                    shows_code, since_code = False, None
                    on_title = block.startswith("# ")
                elif shows_code and since_code is None:
                    since_code = len(out) - 1
            continue
        if on_title and not shows_code:  # the set-up code: a sub-slide of its own
            out.append(_slide_cell(cell, "subslide"))
            on_title = False
        elif not shows_code:
            out.append(_slide_cell(cell, "-"))
        else:  # a sub-slide of its own, led by the prose written for it
            lead = out[since_code:] if since_code is not None else []
            del out[len(out) - len(lead):]
            shown = [c for c in lead if _slide_type(c) == "-"]
            notes = [c for c in lead if _slide_type(c) != "-"]
            _slide_cell(cell, "-" if shown else "subslide")
            if shown:
                _slide_cell(shown[0], "subslide")
            out += [*shown, cell, *notes]
        shows_code, since_code = True, None
    copy = nbformat.from_dict(nb)
    copy.cells = out
    return copy


def reveal_assets() -> Path:
    """reveal.js 5 as the sphinx-revealjs wheel vendors it (MIT, with its licence)."""
    import sphinx_revealjs

    return Path(sphinx_revealjs.__file__).parent / "_static" / "revealjs"


def export(path: Path, out: Path) -> Path:
    """Write the deck of one notebook into `out` (with reveal.js beside it); return its path."""
    from nbconvert import SlidesExporter

    nb = deck(nbformat.read(path, as_version=4))
    exporter = SlidesExporter(extra_template_basedirs=[str(TEMPLATES)],
                              template_name="reveal_offline")
    exporter.exclude_input_prompt = exporter.exclude_output_prompt = True
    exporter.language_code = "zh-CN"
    exporter.reveal_url_prefix = "reveal"
    exporter.reveal_theme = "white"
    exporter.reveal_transition = "none"
    exporter.reveal_number = "c/t"
    exporter.reveal_width, exporter.reveal_height = "1280", "800"
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
    out.mkdir(parents=True, exist_ok=True)
    assets = reveal_assets()
    target = out / "reveal"
    if not target.exists():
        for part in ("LICENSE", "dist/reveal.js", "dist/reveal.css", "dist/reset.css",
                     "dist/theme/white.css", "dist/theme/fonts/source-sans-pro",
                     "plugin/notes/notes.js"):
            source, dest = assets / part, target / part
            dest.parent.mkdir(parents=True, exist_ok=True)
            (shutil.copytree if source.is_dir() else shutil.copyfile)(source, dest)
    deck_path = out / f"{path.stem}.html"
    deck_path.write_text(body, encoding="utf-8")
    webfont(set(html.unescape(body)), out / "fonts" / f"{path.stem}.woff2", out / "fonts" / "OFL.txt")
    return deck_path


def chapter_paths(which: str) -> list[Path]:
    paths = nbtool.notebook_paths()
    if which == "all":
        return paths
    chosen = [p for p in paths if p.name.startswith(f"{which}_")]
    if not re.fullmatch(r"\d\d", which) or not chosen:
        numbers = ", ".join(p.name[:2] for p in paths)
        raise SystemExit(f"no chapter {which!r}: give CH=NN, one of {numbers} (or all)")
    return chosen


def serve(folder: Path, page: str, port: int) -> None:
    """Serve the decks on 127.0.0.1 (the speaker view needs http, not file://) until Ctrl-C."""
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(folder))
    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError:  # the port is taken (another deck, another program): any free one
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    url = f"http://127.0.0.1:{server.server_address[1]}/{page}"
    print(f"slides: {url}  (S opens the speaker notes; Ctrl-C stops)", flush=True)
    threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapter", help="two-digit chapter number (03) or all")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "slides")
    parser.add_argument("--serve", action="store_true", help="serve and open the deck")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    decks = [export(path, args.out.resolve()) for path in chapter_paths(args.chapter)]
    for written in decks:
        print(f"wrote {written}", flush=True)
    if args.serve:
        serve(args.out.resolve(), decks[0].name, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
