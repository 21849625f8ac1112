/**
 * The REPL on a sandbox's page: a form that runs Python in the sandbox's live interpreter (the same one
 * `code_run` and forks use), and the last run's value, output and error, escaped. Bounded: the code's
 * length, the run's time and the output kept.
 */
import type { ReplResult } from '../../../service/ports.ts';
import { type Html, h } from '../markup.ts';

/** Characters of code one run takes (the console's body bound is above it). */
export const REPL_CODE_CHARS = 32 * 1024;
/** Seconds one run may take before it is interrupted (the interpreter and its state stay). */
export const REPL_TIMEOUT_S = 30;
/** Output bytes kept per stream. */
export const REPL_OUTPUT_BYTES = 64 * 1024;

export interface ReplShown {
  code: string;
  result: ReplResult;
}

function flags(r: ReplResult): string {
  const out: string[] = [];
  if (r.timedOut) out.push(`interrupted after ${REPL_TIMEOUT_S} s`);
  if (r.restarted) out.push('the interpreter was restarted: its earlier state is gone');
  if (r.oomKilled) out.push('killed for memory');
  if (r.truncated) out.push('output cut');
  if (r.images.length) out.push(`${r.images.length} image(s) not shown here`);
  return out.join('; ');
}

function resultBlock(r: ReplResult): Html {
  const f = flags(r);
  return h`<div id="repl-result">
${r.stdout ? h`<pre class="stdout">${r.stdout}</pre>` : ''}${r.stderr ? h`<pre class="stderr">${r.stderr}</pre>` : ''}
${r.value !== null ? h`<pre class="value" id="repl-value">${r.value}</pre>` : ''}
${r.error ? h`<pre class="error" id="repl-error">${r.error.traceback || `${r.error.type}: ${r.error.message}`}</pre>` : ''}
${f ? h`<p class="muted">${f}</p>` : ''}<p class="muted">${Math.round(r.durationMs)} ms</p></div>`;
}

export function replPanel(id: string, shown?: ReplShown): Html {
  return h`<section><h3>Python REPL</h3>
<form method="post" action="/console/sandboxes/${encodeURIComponent(id)}/repl">
<textarea name="code" rows="4" cols="80" maxlength="${REPL_CODE_CHARS}" required>${shown?.code ?? ''}</textarea>
<br><button type="submit">Run</button> <span class="muted">in the sandbox's live interpreter, at most ${REPL_TIMEOUT_S} s</span></form>
${shown ? resultBlock(shown.result) : ''}</section>`;
}
