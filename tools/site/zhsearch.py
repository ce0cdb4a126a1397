"""Sphinx extension: the course's search. Chinese words, the chapter text only.

Sphinx's Chinese indexer (sphinx.search.zh, words split by jieba) stems Latin words with the
English stemmer, but Sphinx 9.0 writes `window.Stemmer = ChineseStemmer;`, a class no script
defines: the search page then stops at "正在搜索中" (sphinx-doc/sphinx#14229, fixed after 9.0,
which is the newest Sphinx for Python 3.11). Naming the language after the stemmer it uses
makes 9.0 write `EnglishStemmer`; later versions take the name from the stemmer file anyway.

Only the chapter text is searched: the download box that tools/sitebuild.py puts under every
chapter's title (raw HTML, class `chapter-links`) is left out of the index, and the result
snippets are cut from the article alone, not from the theme's furniture around it
(_static/course_search.js).
"""

from __future__ import annotations

from docutils import nodes
from sphinx.search import WordCollector
from sphinx.search.zh import SearchChinese

__all__ = ["FURNITURE", "CourseSearchChinese", "setup"]

FURNITURE = 'class="chapter-links"'  # raw HTML that the index leaves out


class CourseSearchChinese(SearchChinese):
    """Sphinx's Chinese search, with the JS stemmer named after english-stemmer.js."""

    language_name = "English"


_collect = WordCollector.dispatch_visit


def _dispatch_visit(self, node) -> None:
    if isinstance(node, nodes.raw) and FURNITURE in node.astext():
        raise nodes.SkipNode
    _collect(self, node)


def setup(app):
    app.add_search_language(CourseSearchChinese)
    WordCollector.dispatch_visit = _dispatch_visit
    app.add_js_file("course_search.js", loading_method="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
