/*
 * The Chinese site's formulas are spoken with MathJax's English speech rules (MathJax 3 has no Chinese
 * ones; site/conf.py): once MathJax has typeset the page, each formula is marked lang="en", so that a
 * screen reader reads its speech text (aria-label) with an English voice on a lang="zh-CN" page.
 */
window.addEventListener("load", () => {
  if (!window.MathJax || !window.MathJax.startup) return;
  window.MathJax.startup.promise.then(() => {
    document.querySelectorAll("mjx-container").forEach((formula) => formula.setAttribute("lang", "en"));
  });
});
