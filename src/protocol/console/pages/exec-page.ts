/**
 * One exec's page: its command and state, and its output as it comes (exec-stream.ts through the page's
 * script, which appends text, never markup). A finished exec shows what the daemon kept of its output
 * (a background exec's latest output; a synchronous one's went to its caller and is not kept).
 */
import type { ExecRecord } from '../../../domain/types.ts';
import { endedAs } from '../exec-stream.ts';
import { duration } from '../format.ts';
import { type Html, h } from '../markup.ts';

export function execBody(sandbox: string, e: ExecRecord, now: number): Html {
  const base = `/console/sandboxes/${encodeURIComponent(sandbox)}`;
  const took =
    e.endedAt === null ? `running for ${duration(now - e.startedAt)}` : duration(e.endedAt - e.startedAt);
  return h`<h2>Exec ${e.id} of <a href="${base}">${sandbox}</a></h2>
<table class="details"><tr><th>command</th><td><code>${e.command.join(' ')}</code></td></tr>
<tr><th>state</th><td id="exec-state">${e.state === 'running' ? 'running' : endedAs(e)}</td></tr>
<tr><th>started</th><td>${new Date(e.startedAt).toISOString()}</td></tr><tr><th>took</th><td>${took}</td></tr></table>
<section><h3>Output</h3><pre id="exec-output" class="output" data-src="${base}/execs/${encodeURIComponent(e.id)}/output"></pre>
<p class="muted" id="exec-note"></p></section><script src="/console/assets/exec.js"></script>`;
}

/** The exec page's script: output appended as text, stderr marked by a class. */
export const EXEC_JS = `'use strict';
(function () {
  var out = document.getElementById('exec-output');
  var state = document.getElementById('exec-state');
  var note = document.getElementById('exec-note');
  if (!out) return;
  var es = new EventSource(out.getAttribute('data-src'));
  var got = false;
  es.addEventListener('out', function (e) {
    var d = JSON.parse(e.data);
    var span = document.createElement('span');
    if (d.stream === 'stderr') span.className = 'stderr';
    span.textContent = d.data;
    out.appendChild(span);
    got = true;
  });
  es.addEventListener('end', function (e) {
    es.close();
    state.textContent = JSON.parse(e.data);
    if (!got) note.textContent = 'No output kept for this exec (a synchronous exec returns its output to its caller).';
  });
  window.addEventListener('pagehide', function () { es.close(); });
})();
`;
