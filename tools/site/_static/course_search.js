/* Search result snippets from the chapter text only (tools/site/zhsearch.py).
 *
 * Sphinx cuts a result's snippet from the page's [role="main"], which in sphinx-book-theme
 * also holds the page furniture: the theme switcher ("System Settings"), the table of
 * contents ("目录"), the previous/next links. Here it is cut from the article alone, without
 * the download box every chapter page carries under its title. */
"use strict";
(() => {
  if (typeof Search === "undefined") return; // not the search page
  const sphinxText = Search.htmlToText;
  Search.htmlToText = (htmlString, anchor) => {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    const main = doc.querySelector('[role="main"]');
    const article = doc.querySelector("article.bd-article");
    if (!main || !article) return sphinxText(htmlString, anchor);
    article.querySelectorAll(".chapter-links").forEach((el) => el.remove());
    main.replaceChildren(article);
    return sphinxText(doc.documentElement.outerHTML, anchor);
  };
})();
