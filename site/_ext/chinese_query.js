/*
 * The Chinese site's query splitter (course_links.py puts it in language_data.js). Sphinx cuts the
 * pages' Chinese text into words with jieba, but its default splitter keeps a query's run of Chinese
 * characters whole, so 困惑度是什么 or 评分器 (indexed as 评分 + 器) would match no word of the index.
 * Here each run is cut into the longest words the site's index holds, left to right; a character
 * that starts no indexed word is left out (single characters are not indexed).
 */
var splitQuery = (query) => {
  const words = query
    .split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)
    .filter((term) => term);
  const index = typeof Search !== "undefined" ? Search._index : null;
  if (!index) return words;
  const known = (word) =>
    Object.hasOwn(index.terms, word) || Object.hasOwn(index.titleterms, word);
  const terms = [];
  for (const word of words) {
    for (const part of word.match(/\p{Script=Han}+|\P{Script=Han}+/gu)) {
      if (!/\p{Script=Han}/u.test(part) || known(part)) {
        terms.push(part);
        continue;
      }
      for (let start = 0; start < part.length; ) {
        let end = part.length;
        while (end > start + 1 && !known(part.slice(start, end))) end -= 1;
        if (known(part.slice(start, end))) terms.push(part.slice(start, end));
        start = end;
      }
    }
  }
  return terms;
};
