/**
 * A tool's output as an MCP CallToolResult, carrying every large field once and bounded in size:
 *
 *   content[0]  JSON text of structuredContent, where each bulk field is replaced by a short pointer
 *               ("next content block, N bytes"), so the model knows which block is which
 *   content[i]  each non-empty bulk field (stdout, stderr, file content) as its own text block, with
 *               `_meta: {"forkbox/field": name}` for programs
 *   then        the tool's extra blocks (images)
 *   structuredContent  the output without the bulk fields (the advertised output schema omits them too)
 *
 * The MCP spec recommends a JSON text copy of structuredContent; copying stdout there as well is what
 * doubled large results, so bulk fields are not copied. Whatever a tool returns, the whole result stays
 * under `maxBytes` of JSON: text blocks are cut in the middle (head and tail kept, a marker line saying
 * how much was cut) and images dropped, with a note, until it fits.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { ExtraContent, ToolOutput } from './tool-kit.ts';

/** Default bound on one tool result's JSON (a few MiB, well under every client's message limit). */
export const MAX_RESULT_BYTES = 4 * 1024 * 1024;
export const FIELD_META = 'forkbox/field';

type Block = CallToolResult['content'][number];

const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v), 'utf8');

/** Keep the head and tail of `text` within `budget` bytes of JSON, with a marker line between. */
export function cutMiddle(text: string, budget: number, why: string): string {
  const total = Buffer.byteLength(text, 'utf8');
  const encoded = jsonBytes(text);
  if (encoded <= budget) return text;
  // JSON escaping can grow text up to 6x (control characters): scale by the real encoded size.
  const ratio = Math.max(1, encoded / Math.max(1, total));
  const keep = Math.max(0, Math.floor(budget / ratio) - 200);
  if (total <= keep) return text;
  const buf = Buffer.from(text, 'utf8');
  const headBytes = Math.floor((keep * 3) / 4);
  const tailBytes = keep - headBytes;
  const head = buf
    .subarray(0, headBytes)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  const tail = buf
    .subarray(total - tailBytes)
    .toString('utf8')
    .replace(/^\uFFFD/, '');
  const cut = total - Buffer.byteLength(head, 'utf8') - Buffer.byteLength(tail, 'utf8');
  return `${head}\n[forkbox: ${cut} bytes cut here ${why}]\n${tail}`;
}

function pointer(index: number, text: string): string {
  return `(content block ${index}, ${Buffer.byteLength(text, 'utf8')} bytes)`;
}

export function buildToolResult(
  out: ToolOutput<Record<string, unknown>>,
  bulk: readonly string[],
  maxBytes = MAX_RESULT_BYTES,
): CallToolResult {
  const structured: Record<string, unknown> = { ...out.structured };
  const pointers: Record<string, unknown> = {};
  const blocks: { field: string; text: string }[] = [];
  for (const field of bulk) {
    const v = structured[field];
    delete structured[field];
    if (typeof v !== 'string') continue;
    if (v === '') {
      pointers[field] = '';
      continue;
    }
    blocks.push({ field, text: v });
  }
  let extra: ExtraContent[] = out.extra ?? [];
  const fixed = jsonBytes(structured) + 512 * (blocks.length + 1);
  // Bound the bulk text: each block gets a share of what is left after the metadata (largest cut first).
  let room = Math.max(64 * 1024, maxBytes - fixed);
  const imageBytes = extra.reduce((a, b) => a + jsonBytes(b), 0);
  if (imageBytes > room / 2) {
    const kept: ExtraContent[] = [];
    let used = 0;
    for (const e of extra) {
      const n = jsonBytes(e);
      if (used + n <= room / 2) {
        kept.push(e);
        used += n;
      }
    }
    const dropped = extra.length - kept.length;
    extra = [
      ...kept,
      {
        type: 'text',
        text: `[forkbox: ${dropped} image(s) left out to keep the result under ${maxBytes} bytes]`,
      },
    ];
  }
  room -= extra.reduce((a, b) => a + jsonBytes(b), 0);
  const sorted = [...blocks].sort((a, b) => jsonBytes(a.text) - jsonBytes(b.text));
  sorted.forEach((b, i) => {
    const share = Math.floor(room / (sorted.length - i));
    const size = jsonBytes(b.text);
    if (size > share) b.text = cutMiddle(b.text, share, `to keep the result under ${maxBytes} bytes`);
    room -= Math.min(size, jsonBytes(b.text));
  });
  blocks.forEach((b, i) => {
    pointers[b.field] = pointer(i + 1, b.text);
  });
  const content: Block[] = [
    { type: 'text', text: JSON.stringify({ ...structured, ...pointers }) },
    ...blocks.map((b): Block => ({ type: 'text', text: b.text, _meta: { [FIELD_META]: b.field } })),
    ...extra,
  ];
  return { content, structuredContent: structured, ...(out.isError ? { isError: true } : {}) };
}
