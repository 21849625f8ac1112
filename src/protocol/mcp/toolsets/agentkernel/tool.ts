/**
 * An agentkernel tool: compatTool (compat-tool.ts) with agentkernel's error text and its result rule —
 * every result is one text block, and a text over AGENTKERNEL_RESULT_BYTES keeps its first and last
 * halves around a `... [N bytes truncated] ...` marker, as agentkernel's server cut its results.
 */
import type { z } from 'zod';
import { AGENTKERNEL_RESULT_BYTES } from '../../../../domain/limits.ts';
import { type CompatToolDef, compatTool } from '../../kit/compat-tool.ts';
import type { ToolsetTool } from '../../toolset.ts';
import { agentkernelErrorText } from './errors.ts';

/** The end of `buf` moved back to a UTF-8 character boundary (never splits a character). */
function charBoundary(buf: Buffer, end: number): number {
  let i = end;
  while (i > 0 && i < buf.length && ((buf[i] ?? 0) & 0xc0) === 0x80) i--;
  return i;
}

/** agentkernel's head + tail cut of a long text (bytes of UTF-8). */
export function truncateText(text: string, max = AGENTKERNEL_RESULT_BYTES): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= max) return text;
  const keep = Math.floor(max / 2);
  const head = buf.subarray(0, charBoundary(buf, keep)).toString('utf8');
  const tail = buf.subarray(charBoundary(buf, buf.length - keep)).toString('utf8');
  return `${head}\n\n... [${buf.length - max} bytes truncated] ...\n\n${tail}`;
}

export function akTool<I extends z.ZodObject>(def: CompatToolDef<I>): ToolsetTool {
  return compatTool(
    {
      ...def,
      run: async (args, ctx) => {
        const value = await def.run(args, ctx);
        return truncateText(typeof value === 'string' ? value : JSON.stringify(value, null, 2));
      },
    },
    agentkernelErrorText,
  );
}
