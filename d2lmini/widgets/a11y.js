// The browser side of d2lmini.widgets.a11y.Access (every notebook's panels): applies the panel's
// marks (accessible names, image alts, live regions, expandable headers) to its views, keeps
// keys inside the panel, moves the focus to the Stop control while a run disables the focused
// control, and gives the focus back to that control when it is enabled again.
const HANDLE = '.noUi-handle, .ui-slider-handle';
const FIELDS = 'select, input, textarea';
const FOCUSABLE = 'button, select, input, textarea, [tabindex], [contenteditable]';

function apply(root, marks) {
  // ipywidgets 8 writes a widget's unset tooltip as title="null", which a screen reader reads out.
  for (const el of root.querySelectorAll('[title="null"]')) el.removeAttribute('title');
  for (const [cls, mark] of Object.entries(marks)) {
    for (const el of root.querySelectorAll('.' + cls)) {
      if (mark.kind === 'image') {
        const img = el.tagName === 'IMG' ? el : el.querySelector('img');
        if (img && img.getAttribute('alt') !== mark.text) img.setAttribute('alt', mark.text);
      } else if (mark.kind === 'expandable') {
        expandable(el);
      } else if (mark.kind === 'live') {
        setAll(el, {role: 'status', 'aria-live': 'polite', 'aria-atomic': 'true'});
      } else {
        nameControl(el, mark);
      }
    }
  }
}

function setAll(el, attributes) {
  for (const [key, value] of Object.entries(attributes)) {
    if (el.getAttribute(key) !== value) el.setAttribute(key, value);
  }
}

function nameControl(el, mark) {
  const handle = el.querySelector(HANDLE);
  if (handle) {
    const readout = el.querySelector('.widget-readout');
    const shown = readout && readout.offsetParent !== null ? readout.textContent.trim() : '';
    setAll(handle, {'aria-label': mark.text, 'aria-valuetext': shown || mark.valuetext || ''});
    if (readout) setAll(readout, {'aria-label': mark.text + ', typed value', role: 'textbox'});
    return;
  }
  const buttons = el.querySelectorAll('button');
  if (buttons.length > 1) { setAll(el, {role: 'group', 'aria-label': mark.text}); return; }
  const target = el.matches('button, ' + FIELDS) ? el : (el.querySelector(FIELDS) || buttons[0]);
  if (target) setAll(target, {'aria-label': mark.text});
  for (const icon of el.querySelectorAll('i.fa')) setAll(icon, {'aria-hidden': 'true'});
}

// An Accordion's headers are plain divs: make each a button that Tab reaches and Enter/Space opens.
function expandable(el) {
  for (const header of el.querySelectorAll('.jupyter-widget-Collapse-header, .p-Collapse-header')) {
    const open = header.parentElement.className.includes('Collapse-open');
    // Named by its text: the caret icon's font character must not be read out.
    setAll(header, {tabindex: '0', role: 'button', 'aria-expanded': String(open),
                    'aria-label': header.textContent.trim()});
    for (const icon of header.querySelectorAll('i, .fa')) setAll(icon, {'aria-hidden': 'true'});
    if (!header.dataset.d2lKeys) {
      header.dataset.d2lKeys = '1';
      header.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); header.click(); }
      });
    }
  }
}

// Text spacing (WCAG 1.4.12), at every width: a label or button that a reader's wider letter, word
// and line spacing no longer fits wraps onto another line, and is never narrower than its longest
// word, instead of being cut off with an ellipsis (ipywidgets' labels and buttons are one fixed-size
// line). Text that fits stays on one line, so the panels look as before.
// Reflow (WCAG 1.4.10): on a window 640 CSS px wide or less (320 px is 1280 px at 400 % zoom) a
// panel is one column. Every widget may shrink to the width it is given (a fixed `width` of its
// Layout becomes a most, not a least), rows wrap instead of running off the side, a control's
// label goes above it, and only figures and data tables scroll sideways. Wider windows keep the
// panels' own layout.
const REFLOW_CSS = `
.d2l-reflow .widget-label, .d2l-reflow label, .d2l-reflow button {
  white-space: normal; height: auto; min-height: var(--jp-widgets-inline-height, 28px);
  min-width: min-content; }
.d2l-reflow .widget-inline-hbox { height: auto; min-height: var(--jp-widgets-inline-height, 28px); }
@media (max-width: 640px) {
  .d2l-reflow .jupyter-widgets, .d2l-reflow .widget-inline-hbox, .d2l-reflow .widget-inline-vbox {
    max-width: 100% !important; min-width: 0 !important; box-sizing: border-box;
    margin-left: 0 !important; margin-right: 0 !important; }
  .d2l-reflow .widget-hbox, .d2l-reflow .jupyter-widget-hbox { flex-wrap: wrap; }
  .d2l-reflow .widget-inline-hbox { flex-wrap: wrap; height: auto !important; }
  .d2l-reflow .widget-hbox > .widget-label:first-child,
  .d2l-reflow .widget-inline-hbox > .widget-label:first-child {
    width: 100% !important; max-width: 100% !important; text-align: left; }
  .d2l-reflow .widget-label, .d2l-reflow label, .d2l-reflow button {
    white-space: normal !important; height: auto !important;
    min-height: var(--jp-widgets-inline-height, 28px); overflow-wrap: anywhere; }
  .d2l-reflow .widget-html-content {
    min-width: 0; max-width: 100%; white-space: normal; overflow-wrap: anywhere; }
  .d2l-reflow img { max-width: 100% !important; height: auto !important; }
  .d2l-reflow table { display: block; max-width: 100%; overflow-x: auto; }
}`;

function addReflowStyle() {
  if (document.getElementById('d2l-reflow-style')) return;
  const style = document.createElement('style');
  style.id = 'd2l-reflow-style';
  style.textContent = REFLOW_CSS;
  document.head.appendChild(style);
}

// Where the focus is not a place a student chose: nowhere, the page, or a control that is disabled
// or gone (Chromium moves the focus off such a control only when it next draws a frame).
function adrift(active) {
  return !active || active === document.body || !usable(active);
}

// A control in the page that can take the focus.
function usable(el) {
  return el.isConnected && !el.disabled && !el.closest('[disabled]');
}

// Esc leaves the panel for its notebook cell, as Esc leaves a cell's editor: JupyterLab's command-mode
// keys then reach the notebook (Esc, I, I interrupts the kernel, whatever control held the focus,
// the Stop control of a run too), where the panel keeps every other key to itself.
function leave(root) {
  const home = [root.closest('.jp-Cell'), root.closest('.jp-Notebook')]
    .find(e => e && e.hasAttribute('tabindex'));
  if (home) home.focus();
}

function stopControl(root, marks) {
  for (const [cls, mark] of Object.entries(marks)) {
    if (!mark.stop) continue;
    const el = root.querySelector('.' + cls);
    const button = el && (el.tagName === 'BUTTON' ? el : el.querySelector('button'));
    if (button) return button;
  }
  return null;
}

// Tell the kernel whether the reader's system asks for reduced motion (prefers-reduced-motion): the
// lab then redraws its chart during a run every 10 s instead of every 0.3 s.
function reportMotion(model) {
  const query = window.matchMedia ? window.matchMedia('(prefers-reduced-motion: reduce)') : null;
  if (!query) return;
  const report = () => {
    if (model.get('reduced_motion') !== query.matches) {
      model.set('reduced_motion', query.matches);
      model.save_changes();
    }
  };
  report();
  if (query.addEventListener) query.addEventListener('change', report);
}

function render({ model, el }) {
  el.style.display = 'none';
  let root = null, observer = null, scheduled = false, lost = null, last = null;
  const run = () => {
    scheduled = false;
    root = el.closest('.jp-OutputArea-output, .output_subarea, .output') || el.parentElement;
    if (!root) return;
    addReflowStyle();
    if (!root.classList.contains('d2l-reflow')) root.classList.add('d2l-reflow');
    apply(root, model.get('marks'));
    // A run disabled the focused control: its Stop control takes the focus until the run ends.
    const stop = stopControl(root, model.get('marks'));
    if (lost && stop && !stop.disabled && document.activeElement !== stop) {
      const active = document.activeElement;
      if (adrift(active) || active.contains(root)) stop.focus();
    }
    if (lost) {
      let target = lost.target;
      if (!target.isConnected && lost.cls) {
        const control = root.querySelector('.' + lost.cls);
        target = control ? control.querySelectorAll(FOCUSABLE)[lost.index] : null;
      }
      if (target && usable(target)) {
        const active = document.activeElement;
        // The Stop control held the focus only for the run: it goes back, whichever of the two the
        // kernel changed first.
        if (adrift(active) || active.contains(root) || active === stop) target.focus();
        lost = null;
      }
    }
    if (!root.dataset.d2lKeys) {
      root.dataset.d2lKeys = '1';
      // JupyterLab's command-mode shortcuts (ArrowDown: next cell, M: Markdown) act on keys that
      // bubble up from a focused select or slider: keep them inside the panel.
      root.addEventListener('keydown', (event) => {
        if (!(event.ctrlKey || event.metaKey || event.altKey) && !['Tab', 'Escape'].includes(event.key)
            && !(event.shiftKey && event.key === 'Enter')) event.stopPropagation();
        if (event.key === 'Escape' && !(event.ctrlKey || event.metaKey || event.altKey)) {
          // The student chose to leave: the run's next redraw must not pull the focus back to Stop
          // (the cell holds the panel, so it looks like focus the panel lost), or Esc, I, I's I's
          // would land on Stop and the kernel would never be interrupted.
          lost = null;
          leave(root);
        }
      });
      // Disabling a focused control, or a redraw replacing it (toggle buttons), sends the focus to
      // the page: remember the control's element and give the focus back when it can take it.
      root.addEventListener('focusin', (event) => {
        const target = event.target, control = target.closest('[class*="d2l-a11y-"]');
        last = control ? {target, index: [...control.querySelectorAll(FOCUSABLE)].indexOf(target),
                          cls: [...control.classList].find(c => c.startsWith('d2l-a11y-'))} : null;
      });
      root.addEventListener('focusout', (event) => { if (event.relatedTarget) last = null; });
    }
    if (!observer) {
      observer = new MutationObserver((records) => { noteLoss(records); schedule(); });
      observer.observe(root, {subtree: true, childList: true, characterData: true, attributes: true,
                              attributeFilter: ['disabled', 'class', 'src', 'aria-valuenow', 'style', 'title']});
    }
  };
  // Seen from the mutation records, not from the state one frame later: Chromium moves the focus
  // off a disabled control while it draws a frame, possibly after run() has looked and found the
  // focus still in place; if nothing else in the panel changes before the control is enabled again,
  // run() would then see an enabled control and the focus on the page, and never give it back.
  const noteLoss = (records) => {
    if (!last || lost) return;
    const target = last.target;
    if (!target.isConnected || records.some(r => r.attributeName === 'disabled' && r.target.contains(target))) {
      lost = last;
    }
  };
  const schedule = () => { if (!scheduled) { scheduled = true; requestAnimationFrame(run); } };
  model.on('change:marks', schedule);
  setTimeout(schedule, 0);
  reportMotion(model);
  return () => { if (observer) observer.disconnect(); };
}
export default { render };
