/**
 * A unified diff shown side by side: A's lines on the left, B's on the right, with their line numbers.
 * Within a hunk, a run of removed lines and the run of added lines after it are paired row by row (the
 * longer run's extra lines face an empty cell); context lines appear on both sides.
 */
import { type Html, h } from '../markup.ts';

export interface Side {
  n: number;
  text: string;
}

export type SplitRow =
  | { kind: 'hunk'; text: string }
  | { kind: 'same'; left: Side; right: Side }
  | { kind: 'change'; left?: Side; right?: Side };

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/;

/** The rows of a unified diff (file headers skipped; `\ No newline` markers dropped). */
export function splitRows(unified: string): SplitRow[] {
  const rows: SplitRow[] = [];
  let l = 0;
  let r = 0;
  let dels: Side[] = [];
  let adds: Side[] = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) {
      const left = dels[i];
      const right = adds[i];
      rows.push({ kind: 'change', ...(left ? { left } : {}), ...(right ? { right } : {}) });
    }
    dels = [];
    adds = [];
  };
  let inHunk = false;
  for (const line of unified.split('\n')) {
    const m = HUNK.exec(line);
    if (m) {
      flush();
      l = Number(m[1]);
      r = Number(m[2]);
      inHunk = true;
      rows.push({ kind: 'hunk', text: line });
      continue;
    }
    if (!inHunk) continue; // the ---/+++ file headers
    const text = line.slice(1);
    if (line.startsWith('-')) dels.push({ n: l++, text });
    else if (line.startsWith('+')) adds.push({ n: r++, text });
    else if (line.startsWith(' ')) {
      flush();
      rows.push({ kind: 'same', left: { n: l++, text }, right: { n: r++, text } });
    }
  }
  flush();
  return rows;
}

function cells(s: Side | undefined, cls: string): Html {
  return s
    ? h`<td class="ln">${s.n}</td><td class="${cls}">${s.text}</td>`
    : h`<td class="ln"></td><td class="empty"></td>`;
}

export function splitTable(unified: string): Html {
  const rows = splitRows(unified).map((row) => {
    if (row.kind === 'hunk') return h`<tr class="hunk"><td colspan="4">${row.text}</td></tr>`;
    if (row.kind === 'same') return h`<tr>${cells(row.left, 'same')}${cells(row.right, 'same')}</tr>`;
    return h`<tr>${cells(row.left, 'del')}${cells(row.right, 'add')}</tr>`;
  });
  return h`<table class="split"><tbody>${rows}</tbody></table>`;
}
