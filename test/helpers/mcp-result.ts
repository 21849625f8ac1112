/**
 * A tool result as one record: its structured content with the bulk fields (stdout, stderr, file
 * content) put back in. Those travel as their own text blocks, each marked with the field it holds
 * (src/protocol/mcp/kit/tool-result.ts), so a result carries each large field once.
 */
import { FIELD_META } from '../../src/protocol/mcp/kit/tool-result.ts';

interface ResultLike {
  structuredContent?: unknown;
  content?: { type: string; text?: string; _meta?: Record<string, unknown> | undefined }[];
}

export function withBulk(r: ResultLike): Record<string, unknown> {
  const out: Record<string, unknown> = { ...(r.structuredContent as Record<string, unknown> | undefined) };
  for (const b of r.content ?? []) {
    const field = b._meta?.[FIELD_META];
    if (b.type === 'text' && typeof field === 'string') out[field] = b.text;
  }
  return out;
}

/** A tool result as a v1 SDK client types it loosely: its content blocks and error flag. */
export interface TextResult {
  isError?: boolean;
  content: { type: string; text?: string; _meta?: Record<string, unknown> }[];
}

/** The structured fields of a result from its first text block (JSON), with the bulk fields from theirs. */
export function textFields(r: TextResult): Record<string, unknown> {
  const first = r.content[0];
  const out = JSON.parse(first?.type === 'text' ? (first.text ?? '{}') : '{}') as Record<string, unknown>;
  for (const b of r.content) {
    const f = b._meta?.[FIELD_META];
    if (b.type === 'text' && typeof f === 'string') out[f] = b.text ?? '';
  }
  return out;
}
