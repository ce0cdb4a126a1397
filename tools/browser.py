"""Headless Chromium for the course's browser checks: where it is, how it starts, what it sees.

    python tools/browser.py check     # prints one "skipped" line and exits 1 without chromium

Where Chromium is, its flags, the skip line and `launch` are the library's
(`cachequeue.course.procs.browser`: Debian's `chromium` through the playwright wheel with
`executable_path`, a fresh profile, no background traffic), shared with chapter 07's
screenshot and tests/browser/. `serve` publishes a folder on 127.0.0.1 only, on a free port.
`accessibility_violations` runs axe-core on a loaded page.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cachequeue.course.procs.browser import FLAGS, SKIP_LINE, chromium, launch

__all__ = ["FLAGS", "SKIP_LINE", "accessibility_violations", "chromium", "launch", "serve"]


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class names it so)
        pass


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve `directory` over HTTP on 127.0.0.1 (a free port); yield its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# axe-core on the whole page, in two runs. Every rule but color-contrast runs on every element.
# color-contrast, four fifths of axe's time on a chapter page (thousands of highlighted code
# tokens, table cells and output lines, nearly all repeating a few styles), runs on one
# element of each look: text colour, size, weight, shadow and the backgrounds behind it up to
# the first opaque one. A text element whose subtree shows a look not yet checked is checked
# with its subtree; one showing only looks already checked is left out.
_AXE_RUN = """async () => {
  const clear = (c) => c === 'transparent' || /rgba\\(.*,\\s*0\\)$/.test(c);
  const behind = (el) => {
    const parts = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const s = getComputedStyle(e);
      parts.push(s.backgroundColor, s.backgroundImage, s.opacity, s.mixBlendMode, s.filter);
      if (!clear(s.backgroundColor) && s.backgroundImage === 'none') break;
    }
    return parts.join(',');
  };
  const hasText = (el) => [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
  const look = (el) => {
    const s = getComputedStyle(el);
    return [s.color, s.fontSize, s.fontWeight, s.textShadow, s.visibility, behind(el)].join('|');
  };
  const looks = (el, out) => {
    if (hasText(el)) out.push(look(el));
    for (const child of el.children) looks(child, out);
    return out;
  };
  const seen = new Set(), include = [];
  const pick = (el) => {
    if (!hasText(el)) { for (const child of el.children) pick(child); return; }
    const found = looks(el, []);
    if (found.some((k) => !seen.has(k))) { include.push(el); found.forEach((k) => seen.add(k)); }
  };
  pick(document.body);
  const rest = await axe.run(document, {resultTypes: ['violations'],
                                        rules: {'color-contrast': {enabled: false}}});
  const contrast = include.length ? await axe.run({include},
      {runOnly: ['color-contrast'], resultTypes: ['violations']}) : {violations: []};
  return [...rest.violations, ...contrast.violations].map((v) => (
    {id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length}));
}"""


@functools.cache
def _axe_script() -> str:
    from axe_playwright_python.sync_playwright import Axe  # axe-core as the wheel bundles it

    return Axe().axe_script


def accessibility_violations(page) -> list[dict]:
    """axe-core's violations on the loaded `page`: [{id, impact, help, nodes}], every rule
    (color-contrast once per look of text, see _AXE_RUN)."""
    page.evaluate(_axe_script())
    return page.evaluate(_AXE_RUN)


def main(argv: list[str]) -> int:
    if argv != ["check"]:
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    if chromium() is None:
        print(SKIP_LINE)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
