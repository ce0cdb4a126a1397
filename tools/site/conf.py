"""Sphinx configuration of the course site.

tools/sitebuild.py copies this folder next to the pages it generates (one per notebook, the
home page, the run instructions) and runs Sphinx there. Nothing is executed: the pages show
the outputs committed in notebooks/, which nbval keeps true. Nothing is fetched either:
formulas become MathML at build time (mathml.py), the theme serves its own fonts and icons,
and the search index splits Chinese text with jieba. See CONTRIBUTING.md, "The course site".
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# jsonschema (imported by nbformat, so by myst-nb) compiles rfc3987-syntax's grammars when
# that package is installed (JupyterLab's jupyter-events brings it): about 5 s of every build
# for the "iri" format check, which no notebook schema uses. Not importing it skips just that.
sys.modules.setdefault("rfc3987_syntax", None)

project = "缓存、队列与后台任务"
language = "zh_CN"

extensions = ["myst_nb", "mathml", "zhsearch"]
exclude_patterns = ["_extra", ".doctrees", "**.ipynb_checkpoints"]

# Notebooks: committed outputs only, streams merged as JupyterLab shows them.
nb_execution_mode = "off"
nb_merge_streams = True
nb_ipywidgets_js = {}  # no widget state in the course; never load widget JS from a CDN
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

# Search: Sphinx's Chinese indexer splits text with jieba; search_terms.txt teaches it the
# course's own terms (租约令牌, 在途加载 ...), so a query for one finds the chapters using it.
html_search_language = "zh"
html_search_options = {"dict": str(HERE / "search_terms.txt")}

html_theme = "sphinx_book_theme"
html_context = {"default_mode": "light"}  # the mode the browser checks read
html_title = project
html_math_renderer = "mathml"
html_favicon = "_static/favicon.svg"
html_static_path = ["_static"]
html_css_files = ["course.css"]
html_extra_path = ["_extra"]  # downloads/: student and instructor copies, as files
html_copy_source = False
html_show_sourcelink = False
html_use_index = False  # no index entries in the course: no empty index page
html_last_updated_fmt = None
html_show_copyright = False
html_theme_options = {
    "home_page_in_toc": True,
    "use_download_button": False,  # the chapter pages link to the copies learners need
    "use_fullscreen_button": False,
    "show_toc_level": 2,
    "footer_content_items": [],  # no author or copyright line
}
