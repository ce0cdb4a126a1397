"""Sphinx extension: write formulas as MathML at build time (no MathJax, nothing fetched).

Every current browser renders MathML Core natively, and screen readers read it, so the
site needs no script and no CDN for a formula. latex2mathml covers the LaTeX the course
uses; a formula it cannot convert fails the build instead of showing raw TeX.
"""

from __future__ import annotations

from docutils import nodes
from latex2mathml.converter import convert

__all__ = ["setup"]


def _convert(node, display: str) -> str:
    latex = node.astext().strip()
    try:
        return convert(latex, display=display)
    except Exception as exc:  # latex2mathml raises assorted errors for unsupported input
        raise ValueError(f"cannot write this formula as MathML: {latex!r} ({exc})") from exc


def visit_inline(self, node) -> None:
    self.body.append(_convert(node, "inline"))
    raise nodes.SkipNode


def visit_block(self, node) -> None:
    self.body.append(f'<div class="math-display" tabindex="0">{_convert(node, "block")}</div>\n')
    raise nodes.SkipNode


def setup(app):
    app.add_html_math_renderer("mathml", (visit_inline, None), (visit_block, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
