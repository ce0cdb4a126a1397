"""Sphinx extension: Chinese search whose JavaScript stemmer exists on every Sphinx version.

Sphinx's Chinese indexer (sphinx.search.zh, words split by jieba) stems Latin words with the
English stemmer, but Sphinx 9.0 writes `window.Stemmer = ChineseStemmer;`, a class no script
defines: the search page then stops at "正在搜索中" (sphinx-doc/sphinx#14229, fixed after 9.0,
which is the newest Sphinx for Python 3.11). Naming the language after the stemmer it uses
makes 9.0 write `EnglishStemmer`; later versions take the name from the stemmer file anyway.
"""

from __future__ import annotations

from sphinx.search.zh import SearchChinese

__all__ = ["CourseSearchChinese", "setup"]


class CourseSearchChinese(SearchChinese):
    """Sphinx's Chinese search, with the JS stemmer named after english-stemmer.js."""

    language_name = "English"


def setup(app):
    app.add_search_language(CourseSearchChinese)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
