/**
 * A tool result as one record: its structured content with the bulk fields (stdout, stderr, file
 * content) put back in. Those travel as their own text blocks, each marked with the field it holds
 * (src/protocol/mcp/tool-result.ts), so a result carries each large field once.
 */
import { FIELD_META } from '../../src/protocol/mcp/tool-result.ts';

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
