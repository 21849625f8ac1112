/**
 * The terminal's routes: the page, a POST that starts a shell under a pseudo-terminal (a background exec
 * with `tty`), its output as server-sent events, and POSTs of keystrokes and resizes. Bounded: at most
 * MAX_PER_SANDBOX terminals per sandbox, MAX_INPUT_CHARS per keystroke request; a terminal lives while
 * its page reads it: when its last event stream closes, the shell is cancelled after CLOSE_GRACE_MS
 * (a reconnecting page keeps it). Only shells this console started can be typed into or resized here.
 */
import type { Context, Hono } from 'hono';
import { ForkboxError, toForkboxError } from '../../domain/errors.ts';
import type { ForkboxApi } from '../../service/api.ts';
import { toHttpError } from '../rest/errors.ts';
import { execEventStream } from './exec-stream.ts';
import { page } from './markup.ts';
import { TERMINAL_CSP, terminalBody } from './pages/terminal-page.ts';

export const MAX_PER_SANDBOX = 4;
export const MAX_INPUT_CHARS = 64 * 1024;
export const CLOSE_GRACE_MS = 15_000;

interface Terminal {
  sandbox: string;
  tenant: string;
  readers: number;
  grace?: NodeJS.Timeout;
}

export interface TerminalDeps {
  api(): ForkboxApi;
  tenant(): string;
  loggedIn: boolean;
  /** Whether the session that opened a stream is still logged in. */
  stillValid(c: Context): Promise<boolean>;
  /** One of the tenant's console stream slots (events.ts): its release. */
  reserveStream(): () => void;
}

/** A JSON error for the page's script (the console's other errors are pages). */
function jsonError(c: Context, e: unknown) {
  const err = toForkboxError(e);
  return c.json({ error: err.message, code: err.code }, toHttpError(err).status);
}

/** bash as a login shell where the image has it (merged /usr or not), else sh. */
async function shellOf(api: ForkboxApi, sandbox: string): Promise<string[]> {
  for (const bash of ['/usr/bin/bash', '/bin/bash']) {
    const st = await api.statFile(sandbox, bash).catch(() => undefined);
    if (st?.type === 'file') return [bash, '-l'];
  }
  return ['/bin/sh', '-i'];
}

export function mountTerminalRoutes(app: Hono, deps: TerminalDeps): void {
  const terminals = new Map<string, Terminal>();
  let starting = 0;

  /** The terminal this console started for this caller's sandbox, or not found. */
  function mine(sandbox: string, exec: string): Terminal {
    const t = terminals.get(exec);
    if (!t || t.sandbox !== sandbox || t.tenant !== deps.tenant())
      throw new ForkboxError('not_found', `no terminal ${exec} of sandbox ${sandbox} in this console.`);
    return t;
  }
  /** The shell's end, CLOSE_GRACE_MS from now unless a reader comes (never holding the daemon open). */
  function graceFor(exec: string, t: Terminal): NodeJS.Timeout {
    const timer = setTimeout(() => end(exec, t), CLOSE_GRACE_MS);
    timer.unref();
    return timer;
  }
  function end(exec: string, t: Terminal) {
    if (t.grace) clearTimeout(t.grace);
    terminals.delete(exec);
    deps
      .api()
      .cancelExec(t.sandbox, exec)
      .catch(() => undefined);
  }

  app.get('/sandboxes/:id/terminal', async (c) => {
    const s = await deps.api().getSandbox(c.req.param('id'));
    const html = page(`Terminal ${s.name}`, terminalBody(s.id), { loggedIn: deps.loggedIn });
    return c.html(html, 200, { 'Content-Security-Policy': TERMINAL_CSP });
  });

  app.post('/sandboxes/:id/terminal', async (c) => {
    try {
      const api = deps.api();
      const s = await api.getSandbox(c.req.param('id'));
      const size = (await c.req.json().catch(() => ({}))) as { rows?: unknown; cols?: unknown };
      if ([...terminals.values()].filter((t) => t.sandbox === s.id).length >= MAX_PER_SANDBOX)
        throw new ForkboxError(
          'resource_exhausted',
          `sandbox ${s.id} has ${MAX_PER_SANDBOX} terminals open: close one first.`,
        );
      // Counted from now on (before the awaits below), so that concurrent requests cannot pass the cap.
      const t: Terminal = { sandbox: s.id, tenant: deps.tenant(), readers: 0 };
      const placeholder = `starting-${++starting}`;
      terminals.set(placeholder, t);
      try {
        const ex = await api.startExec(s.id, {
          argv: await shellOf(api, s.id),
          env: { TERM: 'xterm-256color' },
          tty: { rows: Number(size.rows ?? 24), cols: Number(size.cols ?? 80) },
        });
        // Until its page reads it: a page that never does leaves no shell behind.
        t.grace = graceFor(ex.id, t);
        terminals.set(ex.id, t);
        return c.json({ exec: ex.id }, 201);
      } finally {
        terminals.delete(placeholder);
      }
    } catch (e) {
      return jsonError(c, e);
    }
  });

  app.get('/sandboxes/:id/terminal/:exec/events', async (c) => {
    const exec = c.req.param('exec');
    const t = mine(c.req.param('id'), exec);
    const release = deps.reserveStream();
    if (t.grace) clearTimeout(t.grace);
    t.readers++;
    return execEventStream(c, {
      api: deps.api(),
      sandbox: t.sandbox,
      exec,
      stillValid: () => deps.stillValid(c),
      release,
      live: () => terminals.get(exec) === t,
      onEnd: () => end(exec, t),
      onClose: () => {
        t.readers--;
        if (t.readers === 0 && terminals.get(exec) === t) t.grace = graceFor(exec, t);
      },
    });
  });

  app.post('/sandboxes/:id/terminal/:exec/input', async (c) => {
    try {
      const t = mine(c.req.param('id'), c.req.param('exec'));
      const text = await c.req.text();
      if (text.length > MAX_INPUT_CHARS)
        throw new ForkboxError(
          'too_large',
          `send at most ${MAX_INPUT_CHARS} characters of keystrokes at once.`,
        );
      await deps.api().writeExecStdin(t.sandbox, c.req.param('exec'), Buffer.from(text, 'utf8'));
      return c.json({ ok: true });
    } catch (e) {
      return jsonError(c, e);
    }
  });

  app.post('/sandboxes/:id/terminal/:exec/resize', async (c) => {
    try {
      const t = mine(c.req.param('id'), c.req.param('exec'));
      const size = (await c.req.json()) as { rows?: unknown; cols?: unknown };
      await deps.api().resizeExec(t.sandbox, c.req.param('exec'), {
        rows: Number(size.rows),
        cols: Number(size.cols),
      });
      return c.json({ ok: true });
    } catch (e) {
      return jsonError(c, e);
    }
  });
}
