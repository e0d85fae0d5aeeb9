// Typeset the formulas of the built course site once, when it is built, so that a reader's browser
// runs no MathJax: a page is complete when it has loaded (issue 47).
//
//   node tools/typeset_math.mjs --mathjax node_modules/mathjax-full \
//       --stylesheet html/_static/mathjax/chtml.css html/notebooks/05_bptt.html ... \
//       --stylesheet html/zh/_static/mathjax/chtml.css html/zh/notebooks/05_bptt.html ...
//
// Run by tools/build_site.py over the pages Sphinx wrote. Each `--stylesheet` starts a group: that
// edition's pages, which link the stylesheet written there (MathJax's CommonHTML rules for every
// character the site's formulas use; its fonts are in `woff-v2/` beside it, which build_site.py copies
// from mathjax-full). Sphinx writes each formula as MathJax would find it in the browser: a
// `<span class="math ...">\(...\)</span>` or `<div class="math ...">\[...\]</div>` (or an amsmath
// environment), and this replaces the TeX in it with MathJax's CommonHTML output (mathjax-full 3.2.2,
// the TeX input, on the lite DOM adaptor) and links the stylesheet in the page's <head>, leaving the
// rest of the page byte for byte as it was.
//
// Speech: MathJax's semantic enrichment (the speech rule engine) gives each formula the aria-label a
// screen reader reads, with ClearSpeak's English rules, the formula itself aria-hidden. The speech rule
// engine has no Chinese rules, so on a page whose <html lang> is not English each formula is marked
// lang="en" (a screen reader reads it with an English voice). ClearSpeak's VerticalLine_Given: a bar
// between two parts, `P(x_t \mid h_{t-1})` (or `|`), is read "given" (the course writes no "divides").
// The enrichment's data-semantic-* attributes are left out: only MathJax's explorer, which the site does not
// load, reads them (they would triple a page's size). tabindex="0": a keyboard or screen reader user reaches each formula and hears its speech, as on the
// pages MathJax typeset in the browser.
//
// A formula that MathJax cannot read (an undefined macro, a TeX error) stops the build, naming its page.

import {createRequire} from 'node:module';
import {readFileSync, writeFileSync, mkdirSync} from 'node:fs';
import path from 'node:path';

// What MathJax needs for the course's TeX: every package the browser's MathJax could load, less those
// that hide an error (noerrors, noundefined) or read TeX differently from it (textmacros).
const LEFT_OUT = new Set(['noerrors', 'noundefined', 'textmacros']);
// The body text of the site's theme has an x-height about 1.2-1.3 times MathJax's TeX font's (the
// browser's MathJax measured 1.27 in Chromium); the formulas are scaled to sit in it.
const SCALE = 1.25;
const FONTS = 'woff-v2'; // the fonts' folder, beside the stylesheet
const SPEECH = {speech: 'deep', domain: 'clearspeak', style: 'VerticalLine_Given', locale: 'en'};
const MATH = /(<(span|div) class="math notranslate nohighlight[^"]*"[^>]*>)([\s\S]*?)(<\/\2>)/g;
const EQUATION_NUMBER = /^(\s*<span class="eqno">[\s\S]*?<\/a><\/span>)?([\s\S]*)$/;
const ENTITIES = {'&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'", '&#x27;': "'"};

/** Parse the command line: the mathjax-full folder and each stylesheet with its pages. */
function parseArguments(args) {
  const groups = [];
  let mathjax = null;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--mathjax') mathjax = args[++i];
    else if (args[i] === '--stylesheet') groups.push({stylesheet: args[++i], pages: []});
    else if (groups.length) groups[groups.length - 1].pages.push(args[i]);
    else throw new Error(`${args[i]}: name a --stylesheet before its pages`);
  }
  if (!mathjax || !groups.length) {
    throw new Error('usage: typeset_math.mjs --mathjax DIR --stylesheet CSS PAGE... [--stylesheet CSS PAGE...]');
  }
  return {mathjax: path.resolve(mathjax), groups};
}

/** A MathJax document that converts TeX to enriched CommonHTML with speech, and its adaptor. */
function mathjaxFor(folder) {
  const require = createRequire(path.join(folder, 'package.json'));
  const load = (module) => require(path.join(folder, 'js', module));
  const {mathjax} = load('mathjax.js');
  const {TeX} = load('input/tex.js');
  const {MathML} = load('input/mathml.js');
  const {CHTML} = load('output/chtml.js');
  const {liteAdaptor} = load('adaptors/liteAdaptor.js');
  const {RegisterHTMLHandler} = load('handlers/html.js');
  const {EnrichHandler} = load('a11y/semantic-enrich.js');
  const {AllPackages} = load('input/tex/AllPackages.js');
  const adaptor = liteAdaptor();
  EnrichHandler(RegisterHTMLHandler(adaptor), new MathML());
  const tex = new TeX({
    packages: AllPackages.filter((name) => !LEFT_OUT.has(name)),
    formatError: (_jax, error) => { throw error; },
  });
  const chtml = new CHTML({fontURL: FONTS, matchFontHeight: false, scale: SCALE});
  const document = mathjax.document('', {InputJax: tex, OutputJax: chtml, enableEnrichment: true, sre: SPEECH,
    enrichError: (_doc, _math, error) => { throw error; }});
  return {mathjax, adaptor, chtml, document};
}

/** Remove the enrichment's data-semantic-* attributes from `node` and everything in it. */
function stripSemantics(adaptor, node) {
  if (adaptor.kind(node) === '#text') return;
  for (const {name} of adaptor.allAttributes(node)) {
    if (name.startsWith('data-semantic-')) adaptor.removeAttribute(node, name);
  }
  for (const child of adaptor.childNodes(node)) stripSemantics(adaptor, child);
}

function unescapeHtml(text) {
  return text.replace(/&(amp|lt|gt|quot|#39|#x27);/g, (entity) => ENTITIES[entity]);
}

/** The TeX of one formula's element content, and whether it is displayed. */
function texOf(content) {
  const text = unescapeHtml(content).trim();
  if (text.startsWith('\\(') && text.endsWith('\\)')) return {tex: text.slice(2, -2), display: false};
  if (text.startsWith('\\[') && text.endsWith('\\]')) return {tex: text.slice(2, -2), display: true};
  return {tex: text, display: true}; // an amsmath environment, \begin{align} ... \end{align}
}

/** Typeset every formula of one page's HTML; return the new HTML and the number of formulas. */
async function typesetPage(html, jax, cache, stylesheet) {
  const english = /<html[^>]*\blang="en\b/.test(html);
  const pieces = [];
  let count = 0;
  let last = 0;
  for (const match of html.matchAll(MATH)) {
    const [whole, open, , content, close] = match;
    const [, number = '', formula] = content.match(EQUATION_NUMBER);
    const {tex, display} = texOf(formula);
    const key = `${display}\u0000${tex}`;
    if (!cache.has(key)) {
      const node = await jax.mathjax.handleRetriesFor(() => jax.document.convert(tex, {display}));
      if (!jax.adaptor.getAttribute(node, 'aria-label')) throw new Error(`no speech for ${tex}`);
      stripSemantics(jax.adaptor, node);
      jax.adaptor.setAttribute(node, 'tabindex', '0');
      cache.set(key, node);
    }
    const node = cache.get(key);
    jax.adaptor.removeAttribute(node, 'lang');
    if (!english) jax.adaptor.setAttribute(node, 'lang', 'en');
    pieces.push(html.slice(last, match.index), open, number, jax.adaptor.outerHTML(node), close);
    last = match.index + whole.length;
    count++;
  }
  pieces.push(html.slice(last));
  let typeset = pieces.join('');
  if (count) {
    const link = `<link rel="stylesheet" type="text/css" href="${stylesheet}" />\n`;
    typeset = typeset.replace('</head>', `${link}</head>`);
  }
  return {html: typeset, count};
}

async function main() {
  const {mathjax: folder, groups} = parseArguments(process.argv.slice(2));
  const jax = mathjaxFor(folder);
  const cache = new Map();
  const problems = [];
  let formulas = 0;
  for (const {stylesheet, pages} of groups) {
    for (const page of pages) {
      const relative = path.relative(path.dirname(page), stylesheet).split(path.sep).join('/');
      try {
        const {html, count} = await typesetPage(readFileSync(page, 'utf-8'), jax, cache, relative);
        if (count) writeFileSync(page, html);
        formulas += count;
      } catch (error) {
        problems.push(`${page}: ${error.message}`);
      }
    }
  }
  if (problems.length) {
    console.error(`formulas MathJax could not typeset:\n${problems.join('\n')}`);
    process.exit(1);
  }
  // After every page: the stylesheet has the rules of every character the formulas use.
  const css = jax.adaptor.textContent(jax.chtml.styleSheet(jax.document));
  for (const {stylesheet} of groups) {
    mkdirSync(path.dirname(stylesheet), {recursive: true});
    writeFileSync(stylesheet, css);
  }
  console.log(`typeset ${formulas} formulas (${cache.size} different) in ${groups.length} editions`);
}

main().catch((error) => {
  console.error(error.stack || String(error));
  process.exit(1);
});
