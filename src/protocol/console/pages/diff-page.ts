/**
 * A diff page: what changed from sandbox A (default: B's parent) to sandbox B. Added, removed and
 * modified paths are listed; each changed regular file (at most UNIFIED_FILES of them) gets its unified
 * diff, and a file with no text diff (binary, too large) is named with the reason.
 */
import type { ForkboxApi } from '../../../service/api.ts';
import type { DiffEntry } from '../../../service/ports.ts';
import { type Html, h, sandboxLink } from '../markup.ts';
import { splitTable } from './diff-split.ts';

/** Changed files given a unified diff on one page; the rest are listed only. */
export const UNIFIED_FILES = 20;
/** Paths listed per kind of change. */
export const LISTED_PATHS = 500;

export interface FileDiff {
  path: string;
  /** The unified diff, or undefined when there is none. */
  unified?: string;
  /** Why there is no text diff (e.g. `/bin/x in B is binary`). */
  note?: string;
}

/** Split the engine's `unified` answer into a diff or a note. */
export function fileDiffOf(path: string, unified: string | undefined): FileDiff {
  const text = unified ?? '';
  if (text.startsWith('--- ') || text.startsWith('@@')) return { path, unified: text };
  return { path, note: text.trim() || 'no text difference' };
}

/** The unified diffs of the changed regular files (bounded). */
export async function loadFileDiffs(
  api: ForkboxApi,
  a: string,
  b: string,
  entries: DiffEntry[],
): Promise<FileDiff[]> {
  const files = entries.filter((e) => (e.b ?? e.a)?.type === 'file').slice(0, UNIFIED_FILES);
  const out: FileDiff[] = [];
  for (const e of files) {
    const r = await api.diffSandboxes(a, b, { paths: [e.path], unifiedFor: e.path });
    out.push(fileDiffOf(e.path, r.unified));
  }
  return out;
}

function diffLines(text: string): Html {
  return h`${text.split('\n').map((line) => {
    const cls = line.startsWith('@@')
      ? 'hunk'
      : line.startsWith('+') && !line.startsWith('+++')
        ? 'add'
        : line.startsWith('-') && !line.startsWith('---')
          ? 'del'
          : '';
    return cls ? h`<span class="${cls}">${line}</span>\n` : h`${line}\n`;
  })}`;
}

function pathList(title: string, id: string, entries: DiffEntry[]): Html {
  if (entries.length === 0) return '' as unknown as Html;
  const more =
    entries.length > LISTED_PATHS ? h`<li class="muted">and ${entries.length - LISTED_PATHS} more</li>` : '';
  return h`<h3>${title} (${entries.length})</h3><ul id="${id}">${entries
    .slice(0, LISTED_PATHS)
    .map((e) => h`<li><code>${e.path}</code></li>`)}${more}</ul>`;
}

/** How file diffs are shown: unified (default) or side by side. */
export type DiffView = 'unified' | 'split';

function viewLinks(a: string, b: string, view: DiffView): Html {
  const href = (v: DiffView) =>
    `/console/sandboxes/${encodeURIComponent(b)}/diff?against=${encodeURIComponent(a)}&view=${v}`;
  const link = (v: DiffView, label: string) =>
    v === view ? h`<strong>${label}</strong>` : h`<a id="view-${v}" href="${href(v)}">${label}</a>`;
  return h`<p class="muted">File diffs: ${link('unified', 'unified')} · ${link('split', 'side by side')}</p>`;
}

export function diffBody(
  a: string,
  b: string,
  d: { added: DiffEntry[]; removed: DiffEntry[]; modified: DiffEntry[]; truncated: boolean },
  files: FileDiff[],
  view: DiffView = 'unified',
): Html {
  const none = d.added.length + d.removed.length + d.modified.length === 0;
  const shown = (u: string) =>
    view === 'split' ? splitTable(u) : h`<pre class="diff">${diffLines(u)}</pre>`;
  const fileSections = files.map((f) =>
    f.unified !== undefined
      ? h`<section class="file"><h4><code>${f.path}</code></h4>${shown(f.unified)}</section>`
      : h`<section class="file"><h4><code>${f.path}</code></h4><p class="binary">${f.note}</p></section>`,
  );
  return h`<h2>Diff ${sandboxLink(a)} → ${sandboxLink(b)}</h2>${files.length ? viewLinks(a, b, view) : ''}
${d.truncated ? h`<p class="error">The comparison stopped early (too many entries): the lists are partial.</p>` : ''}
${none ? h`<p class="muted">No differences.</p>` : ''}
${pathList('Added', 'added', d.added)}${pathList('Removed', 'removed', d.removed)}${pathList('Modified', 'modified', d.modified)}
${files.length ? h`<h3>File diffs</h3>${fileSections}` : ''}`;
}
