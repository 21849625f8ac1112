/**
 * The file browser's routes (files-page.ts): a listing, a file's view, a download, an upload. Paths are
 * the sandbox's own (the agent confines every one to the sandbox); another tenant's sandbox is not found.
 */
import type { Hono } from 'hono';
import { ForkboxError } from '../../domain/errors.ts';
import { SIZES } from '../../domain/limits.ts';
import type { ForkboxApi } from '../../service/api.ts';
import { page } from './markup.ts';
import {
  DOWNLOAD_BYTES,
  downloadName,
  fileBody,
  filesHref,
  listingBody,
  UPLOAD_BYTES,
  VIEW_BYTES,
} from './pages/files-page.ts';
import { noticeQuery, noticeText } from './pages/notice.ts';

/** An absolute sandbox path from a query or form value ('/' when absent). */
export function sandboxPath(raw: string | undefined): string {
  const p = raw === undefined || raw === '' ? '/' : raw;
  if (!p.startsWith('/') || p.length > SIZES.pathChars || p.includes('\0')) {
    throw new ForkboxError(
      'invalid_argument',
      `'${p.slice(0, 200)}' is not an absolute path in the sandbox.`,
    );
  }
  return p;
}

/** The name an uploaded file is written under: its last component, never a path. */
export function uploadName(raw: string): string {
  const name = raw.split(/[\\/]/).at(-1) ?? '';
  if (name === '' || name === '.' || name === '..' || name.length > 255) {
    throw new ForkboxError('invalid_argument', `'${raw.slice(0, 200)}' cannot be a file name: rename it.`);
  }
  return name;
}

export function mountFileRoutes(app: Hono, deps: { api(): ForkboxApi; loggedIn: boolean }): void {
  const opts = { loggedIn: deps.loggedIn };
  app.get('/sandboxes/:id/files', async (c) => {
    const api = deps.api();
    const s = await api.getSandbox(c.req.param('id'));
    const path = sandboxPath(c.req.query('path'));
    const list = await api.listFiles(s.id, path);
    const notice = noticeText((k) => c.req.query(k));
    return c.html(page(`Files ${path}`, listingBody(s.id, path, list.entries, list.truncated, notice), opts));
  });
  app.get('/sandboxes/:id/file', async (c) => {
    const api = deps.api();
    const s = await api.getSandbox(c.req.param('id'));
    const path = sandboxPath(c.req.query('path'));
    const r = await api.readFile(s.id, path, { length: VIEW_BYTES });
    return c.html(page(`File ${path}`, fileBody(s.id, path, r.data, r.size), opts));
  });
  app.get('/sandboxes/:id/download', async (c) => {
    const api = deps.api();
    const s = await api.getSandbox(c.req.param('id'));
    const path = sandboxPath(c.req.query('path'));
    const st = await api.statFile(s.id, path);
    if (st.type !== 'file') throw new ForkboxError('invalid_argument', `${path} is not a regular file.`);
    if (st.size > DOWNLOAD_BYTES) {
      throw new ForkboxError(
        'too_large',
        `${path} is ${st.size} bytes; the console downloads at most ${DOWNLOAD_BYTES}. Use 'forkbox cp ${s.id}:${path} .'.`,
      );
    }
    const r = await api.readFile(s.id, path, { length: DOWNLOAD_BYTES });
    return c.body(new Uint8Array(r.data), 200, {
      'Content-Type': 'application/octet-stream',
      'Content-Disposition': `attachment; filename="${downloadName(path)}"`,
    });
  });
  app.post('/sandboxes/:id/upload', async (c) => {
    const api = deps.api();
    const s = await api.getSandbox(c.req.param('id'));
    const form = await c.req.parseBody();
    const dir = sandboxPath(typeof form.dir === 'string' ? form.dir : undefined);
    const file = form.file;
    if (!(file instanceof File)) throw new ForkboxError('invalid_argument', 'choose a file to upload.');
    if (file.size > UPLOAD_BYTES) {
      throw new ForkboxError(
        'too_large',
        `the console uploads at most ${UPLOAD_BYTES} bytes; use 'forkbox cp FILE ${s.id}:${dir}'.`,
      );
    }
    const name = uploadName(file.name);
    const target = `${dir.replace(/\/+$/, '')}/${name}`;
    await api.writeFile(s.id, target, Buffer.from(await file.arrayBuffer()));
    return c.redirect(`${filesHref(s.id, dir)}&${noticeQuery({ done: 'uploaded', name }).slice(1)}`, 303);
  });
}
