/**
 * The console's only script and style sheet, served as files from /console/assets/ (the CSP allows no
 * inline script or style and nothing from another site). They live here as strings so the built
 * daemon (dist/) carries them without a bundler or a copy step.
 */

/** Headers of every console response. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
    "font-src 'none'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  // Not no-referrer: under it Chromium sends `Origin: null` with form POSTs, which the Origin check refuses.
  'Referrer-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

/** Live updates: the dashboard's table and tree are replaced by the server's fragments. */
export const CONSOLE_JS = `'use strict';
(function () {
  var live = document.getElementById('live');
  if (!live) return;
  var es = new EventSource('/console/events');
  es.addEventListener('update', function (e) {
    var d = JSON.parse(e.data);
    ['sandboxes', 'tree'].forEach(function (k) {
      var el = document.getElementById(k);
      if (el && typeof d[k] === 'string') el.innerHTML = d[k];
    });
    live.textContent = 'live';
    live.className = 'live on';
  });
  es.addEventListener('logout', function () {
    es.close();
    location.href = '/console/login';
  });
  es.onerror = function () {
    live.textContent = 'reconnecting';
    live.className = 'live off';
  };
  window.addEventListener('pagehide', function () { es.close(); });
})();
`;

export const CONSOLE_CSS = `body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{display:flex;gap:1rem;align-items:center;padding:.5rem 1rem;background:#1d2330;color:#fff}
header a{color:#fff}header form{margin-left:auto}main{padding:1rem}
table{border-collapse:collapse;background:#fff;width:100%}th,td{border:1px solid #d5d9e0;padding:.25rem .5rem;text-align:left}
th{background:#eef0f4}.live{font-size:12px;padding:0 .4rem;border-radius:3px}.on{background:#2e7d32}.off{background:#b26a00}
ul.tree,ul.tree ul{list-style:none;padding-left:1.2rem}ul.tree li{margin:.2rem 0}
.state{font-size:12px;padding:0 .3rem;border-radius:3px;background:#dde3ec}.state.running{background:#c8e6c9}.state.snapshot{background:#e1d5f5}.state.merge{background:#ffe0b2}
.error{color:#b00020}.muted{color:#6b7280}pre.diff{background:#fff;border:1px solid #d5d9e0;padding:.5rem;overflow:auto}
pre.diff .add{color:#1b5e20;background:#e8f5e9}pre.diff .del{color:#b71c1c;background:#ffebee}pre.diff .hunk{color:#1565c0}
form.inline{display:inline-block;margin-right:1rem}section{margin-bottom:1.5rem}
#repl-result pre,pre#content{background:#fff;border:1px solid #d5d9e0;padding:.5rem;overflow:auto;max-height:40rem}
pre.stderr,pre.output .stderr{color:#8a4b00}pre.output{background:#fff;border:1px solid #d5d9e0;padding:.5rem;overflow:auto;max-height:40rem;min-height:2rem}pre.value{font-weight:600}textarea{font:13px/1.4 ui-monospace,monospace;width:100%}
.crumbs{font-family:ui-monospace,monospace}
table.split{font:13px/1.4 ui-monospace,monospace;table-layout:fixed}table.split td{white-space:pre-wrap;word-break:break-all;border:none;padding:0 .4rem}
table.split td.ln{width:3.5rem;color:#6b7280;text-align:right;background:#f3f4f6}table.split .del{background:#ffebee}
table.split .add{background:#e8f5e9}table.split .empty{background:#f9fafb}table.split tr.hunk td{color:#1565c0;background:#eef4fb}
#terminal{height:28rem;background:#000;padding:.25rem}
`;
