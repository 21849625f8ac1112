/**
 * The terminal page: xterm.js (served from the daemon's own node_modules, like every console asset) on a
 * shell that runs in the sandbox under a pseudo-terminal (an exec with `tty`). The page's script starts
 * the shell at the terminal's size, reads its output as server-sent events, and POSTs keystrokes and
 * resizes; terminal-routes.ts serves those.
 *
 * xterm.js adds `<style>` elements of its own (cell sizes, colours), which a CSP without
 * `'unsafe-inline'` styles blocks: this page alone allows inline styles (TERMINAL_CSP). Scripts stay
 * `'self'` only; nothing a sandbox prints is markup (xterm.js draws text).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { SECURITY_HEADERS } from '../assets.ts';
import { type Html, h } from '../markup.ts';

export const TERMINAL_CSP = (SECURITY_HEADERS['Content-Security-Policy'] ?? '').replace(
  "style-src 'self'",
  "style-src 'self' 'unsafe-inline'",
);

/** xterm.js, its fit add-on and its style sheet, read once from node_modules (no source-map links). */
export function loadTerminalAssets(): { xtermJs: string; fitJs: string; xtermCss: string } {
  const require = createRequire(import.meta.url);
  const read = (id: string) =>
    readFileSync(require.resolve(id), 'utf8').replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n');
  return {
    xtermJs: read('@xterm/xterm/lib/xterm.js'),
    fitJs: read('@xterm/addon-fit/lib/addon-fit.js'),
    xtermCss: read('@xterm/xterm/css/xterm.css'),
  };
}

export function terminalBody(id: string): Html {
  const base = `/console/sandboxes/${encodeURIComponent(id)}`;
  return h`<h2>Terminal of <a href="${base}">${id}</a></h2>
<p class="muted" id="term-state">starting…</p>
<div id="terminal" data-base="${base}"></div>
<p class="muted">A shell in the sandbox under a pseudo-terminal; it ends when you leave this page.</p>
<link rel="stylesheet" href="/console/assets/xterm.css">
<script src="/console/assets/xterm.js"></script><script src="/console/assets/addon-fit.js"></script>
<script src="/console/assets/terminal.js"></script>`;
}

/** The page's script: start, stream, type, resize. */
export const TERMINAL_JS = `'use strict';
(function () {
  var el = document.getElementById('terminal');
  var state = document.getElementById('term-state');
  if (!el || !window.Terminal || !window.FitAddon) return;
  var base = el.getAttribute('data-base');
  var term = new window.Terminal({ cursorBlink: true, scrollback: 5000 });
  var fit = new window.FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(el);
  fit.fit();
  function post(path, body, type) {
    return fetch(base + path, { method: 'POST', headers: { 'Content-Type': type }, body: body, credentials: 'same-origin' });
  }
  function say(text, cls) { state.textContent = text; state.className = cls || 'muted'; }
  post('/terminal', JSON.stringify({ rows: term.rows, cols: term.cols }), 'application/json')
    .then(function (r) { return r.json().then(function (b) { return { ok: r.ok, body: b }; }); })
    .then(function (r) {
      if (!r.ok) { say(r.body.error || 'the terminal could not start', 'error'); return; }
      var exec = r.body.exec;
      var path = '/terminal/' + encodeURIComponent(exec);
      el.setAttribute('data-exec', exec);
      var es = new EventSource(base + path + '/events');
      es.addEventListener('out', function (e) { term.write(JSON.parse(e.data).data); });
      es.addEventListener('end', function (e) {
        es.close();
        say('the shell ended: ' + JSON.parse(e.data), 'muted');
      });
      es.onerror = function () { say('reconnecting', 'muted'); };
      es.onopen = function () { say('connected', 'muted'); };
      // Keystrokes in order: one request at a time, the rest queued.
      var queue = '', sending = false;
      function flush() {
        if (sending || !queue) return;
        var data = queue; queue = ''; sending = true;
        post(path + '/input', data, 'text/plain; charset=utf-8').finally(function () { sending = false; flush(); });
      }
      term.onData(function (d) { queue += d; flush(); });
      var timer = null;
      term.onResize(function (s) {
        clearTimeout(timer);
        timer = setTimeout(function () {
          post(path + '/resize', JSON.stringify({ rows: s.rows, cols: s.cols }), 'application/json');
        }, 150);
      });
      window.addEventListener('resize', function () { fit.fit(); });
      term.focus();
    })
    .catch(function () { say('the terminal could not start', 'error'); });
})();
`;
