/**
 * A sandbox's routes: its page, its diff page, the fork / snapshot / TTL / kill actions (POST forms that
 * answer 303 back to a page), the REPL (a POST answered with the page and the run's result) and the file
 * browser (files-routes.ts). Another tenant's sandbox is simply not found (404), as over the API.
 */
import type { Context, Hono } from 'hono';
import { ERROR_CODES, type ErrorCode, ForkboxError } from '../../domain/errors.ts';
import type { ForkboxApi, ForkResult, SandboxInfo } from '../../service/api.ts';
import { execEventStream } from './exec-stream.ts';
import { mountFileRoutes } from './files-routes.ts';
import { page } from './markup.ts';
import { diffBody, loadFileDiffs } from './pages/diff-page.ts';
import { execBody } from './pages/exec-page.ts';
import { type Notice, noticeQuery, noticeText } from './pages/notice.ts';
import { REPL_CODE_CHARS, REPL_OUTPUT_BYTES, REPL_TIMEOUT_S } from './pages/repl-panel.ts';
import { MAX_TTL_MINUTES, sandboxBody } from './pages/sandbox-page.ts';

export interface SandboxRouteDeps {
  api(): ForkboxApi;
  loggedIn: boolean;
  /** Whether the session of a long-lived stream's request still logs in. */
  stillValid(c: Context): Promise<boolean>;
  /** One of the tenant's console stream slots (events.ts): its release. */
  reserveStream(): () => void;
}

/** Children one fork form may ask for. */
export const MAX_FORK_CHILDREN = 8;

const here = (id: string, notice: Notice) =>
  `/console/sandboxes/${encodeURIComponent(id)}${noticeQuery(notice)}`;

async function formOf(c: Context): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(await c.req.parseBody())) if (typeof v === 'string') out[k] = v;
  return out;
}

function forkCount(raw: string | undefined): number {
  const n = Number(raw ?? '1');
  if (!Number.isInteger(n) || n < 1 || n > MAX_FORK_CHILDREN) {
    throw new ForkboxError(
      'invalid_argument',
      `fork into 1 to ${MAX_FORK_CHILDREN} children (got '${raw}').`,
    );
  }
  return n;
}

/** The sandboxes a fork or restore made; when it made none, its first child's error, thrown. */
function madeOrThrow(r: ForkResult): SandboxInfo[] {
  const made = r.children.flatMap((k) => (k.ok && k.sandbox ? [k.sandbox] : []));
  if (made.length > 0) return made;
  const failed = r.children.find((k) => !k.ok)?.error;
  const code = (failed && failed.code in ERROR_CODES ? failed.code : 'internal') as ErrorCode;
  throw new ForkboxError(code, failed?.message ?? 'no sandbox was made.');
}

function ttlMinutes(raw: string | undefined): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_TTL_MINUTES) {
    throw new ForkboxError('invalid_argument', `a TTL of 1 to ${MAX_TTL_MINUTES} minutes (got '${raw}').`);
  }
  return n;
}

export function mountSandboxRoutes(app: Hono, deps: SandboxRouteDeps): void {
  const opts = { loggedIn: deps.loggedIn };
  app.get('/sandboxes/:id', async (c) => {
    const api = deps.api();
    const s = await api.getSandbox(c.req.param('id'), { usage: true });
    const execs = await api.listExecs(s.id).catch(() => []);
    const notice = noticeText((k) => c.req.query(k));
    return c.html(page(`Sandbox ${s.name}`, sandboxBody(s, execs, Date.now(), { notice }), opts));
  });
  app.post('/sandboxes/:id/repl', async (c) => {
    const code = (await formOf(c)).code ?? '';
    if (code.trim() === '' || code.length > REPL_CODE_CHARS) {
      throw new ForkboxError('invalid_argument', `type 1 to ${REPL_CODE_CHARS} characters of Python.`);
    }
    const api = deps.api();
    const result = await api.runCode(c.req.param('id'), {
      code,
      timeoutSeconds: REPL_TIMEOUT_S,
      maxOutputBytes: REPL_OUTPUT_BYTES,
    });
    const s = await api.getSandbox(c.req.param('id'), { usage: true });
    const execs = await api.listExecs(s.id).catch(() => []);
    const body = sandboxBody(s, execs, Date.now(), { repl: { code, result } });
    return c.html(page(`Sandbox ${s.name}`, body, opts));
  });
  app.post('/sandboxes/:id/ttl', async (c) => {
    const minutes = ttlMinutes((await formOf(c)).minutes);
    const s = await deps.api().extendSandbox(c.req.param('id'), minutes * 60);
    return c.redirect(here(s.id, { done: 'ttl', minutes }), 303);
  });
  app.get('/sandboxes/:id/diff', async (c) => {
    const api = deps.api();
    const b = await api.getSandbox(c.req.param('id'));
    const against = c.req.query('against')?.trim() || b.parentId;
    if (!against) {
      throw new ForkboxError(
        'invalid_argument',
        `sandbox ${b.id} has no parent: name one to diff against (?against=<id>).`,
      );
    }
    const a = await api.getSandbox(against);
    const d = await api.diffSandboxes(a.id, b.id);
    const files = await loadFileDiffs(api, a.id, b.id, [...d.modified, ...d.added]);
    const view = c.req.query('view') === 'split' ? 'split' : 'unified';
    // A diff past one page (10,000 entries) shows its first page, marked partial.
    const shown = { ...d, truncated: d.truncated || (d.nextCursor ?? null) !== null };
    return c.html(page(`Diff ${a.name} → ${b.name}`, diffBody(a.id, b.id, shown, files, view), opts));
  });
  app.post('/sandboxes/:id/fork', async (c) => {
    const n = forkCount((await formOf(c)).n);
    const r = await deps.api().forkSandbox(c.req.param('id'), { n });
    // A partial fork is shown as `Forked m of n`.
    const made = madeOrThrow(r).length;
    return c.redirect(here(r.source, { done: 'forked', made, of: n }), 303);
  });
  app.post('/sandboxes/:id/snapshot', async (c) => {
    const name = (await formOf(c)).name?.trim();
    const snap = await deps.api().createSnapshot(c.req.param('id'), name ? { name } : {});
    return c.redirect(here(c.req.param('id'), { done: 'snapshot', name: snap.name }), 303);
  });
  app.post('/sandboxes/:id/kill', async (c) => {
    const s = await deps.api().killSandbox(c.req.param('id'));
    return c.redirect(here(s.id, { done: 'killed' }), 303);
  });
  app.get('/sandboxes/:id/execs/:exec', async (c) => {
    const api = deps.api();
    const s = await api.getSandbox(c.req.param('id'));
    const e = (await api.listExecs(s.id)).find((x) => x.id === c.req.param('exec'));
    if (!e) throw new ForkboxError('not_found', `sandbox ${s.id} has no exec ${c.req.param('exec')}.`);
    return c.html(page(`Exec ${e.id}`, execBody(s.id, e, Date.now()), opts));
  });
  app.get('/sandboxes/:id/execs/:exec/output', async (c) => {
    const api = deps.api();
    const s = await api.getSandbox(c.req.param('id'));
    const release = deps.reserveStream();
    return execEventStream(c, {
      api,
      sandbox: s.id,
      exec: c.req.param('exec'),
      stillValid: () => deps.stillValid(c),
      release,
    });
  });
  mountFileRoutes(app, deps);
  app.get('/sandboxes', (c) => c.redirect('/console', 303));
  app.post('/snapshots/:id/restore', async (c) => {
    const api = deps.api();
    const snap = await api.getSnapshot(c.req.param('id'));
    const [made] = madeOrThrow(await api.restoreSnapshot(snap.id, { n: 1 }));
    return c.redirect(here(made?.id ?? '', { done: 'restored', name: snap.name }), 303);
  });
}
