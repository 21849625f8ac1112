/**
 * A sandbox's file browser: a directory listing (directories link deeper, files to their view), a file's
 * view (text shown escaped, at most VIEW_BYTES; a binary file is named as one), a download, and an upload
 * form into the directory shown. A file's bytes are never served as a page: downloads are
 * `application/octet-stream` attachments under the console's CSP and `nosniff`, so an HTML file in the
 * sandbox cannot run script on the console's origin.
 */
import type { FileEntry } from '../../../service/ports.ts';
import { bytes } from '../format.ts';
import { type Html, h } from '../markup.ts';

/** Bytes of a file shown on its view page (the download has the whole file, up to DOWNLOAD_BYTES). */
export const VIEW_BYTES = 256 * 1024;
/** Largest download through the console (bigger files: `forkbox cp` or the API, in parts). */
export const DOWNLOAD_BYTES = 64 * 1024 * 1024;
/** Largest upload through the console (the console's body bound for the upload route). */
export const UPLOAD_BYTES = 8 * 1024 * 1024;
/** Entries listed in one directory (the listing says when there were more). */
export const ENTRIES_SHOWN = 500;

const base = (id: string) => `/console/sandboxes/${encodeURIComponent(id)}`;
export const filesHref = (id: string, path: string) => `${base(id)}/files?path=${encodeURIComponent(path)}`;
const viewHref = (id: string, path: string) => `${base(id)}/file?path=${encodeURIComponent(path)}`;
const downloadHref = (id: string, path: string) => `${base(id)}/download?path=${encodeURIComponent(path)}`;

/** Parent of an absolute sandbox path ('/' for '/' itself). */
export function parentOf(path: string): string {
  const i = path.replace(/\/+$/, '').lastIndexOf('/');
  return i <= 0 ? '/' : path.slice(0, i);
}

/** The path as links, one per component. */
function crumbs(id: string, path: string): Html {
  const parts = path.split('/').filter(Boolean);
  const links = parts.map(
    (p, i) => h` / <a href="${filesHref(id, `/${parts.slice(0, i + 1).join('/')}`)}">${p}</a>`,
  );
  return h`<p class="crumbs"><a href="${filesHref(id, '/')}">/</a>${links}</p>`;
}

function entryRow(id: string, e: FileEntry): Html {
  const link =
    e.type === 'dir'
      ? h`<a href="${filesHref(id, e.path)}">${e.name}/</a>`
      : e.type === 'file'
        ? h`<a href="${viewHref(id, e.path)}">${e.name}</a>`
        : h`${e.name}`;
  const size = e.type === 'file' ? bytes(e.size) : '';
  // A sandbox sets its files' times: one out of Date's range shows as '?' rather than failing the page.
  const when = new Date(e.mtimeMs);
  const mtime = Number.isFinite(when.getTime()) ? when.toISOString() : '?';
  return h`<tr><td>${link}</td><td>${e.type}</td><td>${size}</td><td>${mtime}</td></tr>`;
}

export function listingBody(
  id: string,
  path: string,
  entries: readonly FileEntry[],
  truncated: boolean,
  notice?: string,
): Html {
  const sorted = [...entries].sort(
    (a, b) => Number(b.type === 'dir') - Number(a.type === 'dir') || a.name.localeCompare(b.name),
  );
  const shown = sorted.slice(0, ENTRIES_SHOWN);
  const more = truncated || sorted.length > shown.length;
  return h`<h2>Files of <a href="${base(id)}">${id}</a></h2>${notice ? h`<p class="notice">${notice}</p>` : ''}
${crumbs(id, path)}
<table id="files"><thead><tr><th>name</th><th>type</th><th>size</th><th>modified</th></tr></thead>
<tbody>${path === '/' ? '' : h`<tr><td><a href="${filesHref(id, parentOf(path))}">../</a></td><td>dir</td><td></td><td></td></tr>`}${shown.map((e) => entryRow(id, e))}</tbody></table>
${more ? h`<p class="muted">Only the first ${shown.length} entries are listed.</p>` : ''}
<section><h3>Upload here</h3>
<form method="post" action="${base(id)}/upload" enctype="multipart/form-data">
<input type="hidden" name="dir" value="${path}"><input type="file" name="file" required>
<button type="submit">Upload</button> <span class="muted">at most ${bytes(UPLOAD_BYTES)}</span></form></section>`;
}

/** Whether bytes look like text: valid UTF-8 without NUL. */
export function isText(data: Buffer): boolean {
  if (data.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(data);
    return true;
  } catch {
    // A multi-byte character cut at the end of a partial read is still text.
    if (data.length < 4) return false;
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(data.subarray(0, data.length - 3));
      return true;
    } catch {
      return false;
    }
  }
}

export function fileBody(id: string, path: string, data: Buffer, size: number): Html {
  const download = h`<a id="download" href="${downloadHref(id, path)}">Download</a> (${bytes(size)})`;
  const shown = !isText(data)
    ? h`<p class="muted" id="binary">A binary file: not shown.</p>`
    : h`<pre id="content">${data.toString('utf8')}</pre>${
        size > data.length
          ? h`<p class="muted">The first ${bytes(data.length)} of ${bytes(size)} are shown.</p>`
          : ''
      }`;
  return h`<h2>File of <a href="${base(id)}">${id}</a></h2>${crumbs(id, parentOf(path))}
<p><code>${path}</code> · ${download}</p>${shown}`;
}

/** A download's file name for Content-Disposition: the last component, in safe characters only. */
export function downloadName(path: string): string {
  const last = path.split('/').filter(Boolean).at(-1) ?? 'file';
  const safe = last.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 100);
  return safe === '' || /^\.+$/.test(safe) ? 'file' : safe;
}
