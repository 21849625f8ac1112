/**
 * The argument pre-parser every tool call goes through, before the tool's zod schema:
 *
 * - `null` for an argument means absent (models send it for "not set"; OpenAI strict schemas make every
 *   optional argument nullable);
 * - an argument the tool does not have is an error naming it, the closest valid name and the valid
 *   ones, so the model can correct itself in one turn (a misspelling silently ignored would let it
 *   believe it had set something);
 * - NAME=value list arguments (top-level, or one level down in an object argument) also take the old
 *   map form and `{name, value}` items;
 * - a validation failure names each bad argument and what it needs.
 *
 * Failures are ForkboxErrors (`invalid_argument`), which become `isError` tool results.
 */
import type { z } from 'zod';
import { ForkboxError } from '../../../domain/errors.ts';
import { normalizeKv } from './kv-list.ts';
import { kvProperties, nestedKvProperties } from './portable-schema.ts';

export interface ArgParser {
  parse(raw: unknown): unknown;
}

function dropNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(dropNulls);
  if (typeof v !== 'object' || v === null) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x !== null) out[k] = dropNulls(x);
  return out;
}

function distance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0] as number;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j] as number;
      prev[j] = Math.min(up + 1, (prev[j - 1] as number) + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length] as number;
}

function closest(name: string, valid: string[]): string | undefined {
  let best: string | undefined;
  let bestD = Number.POSITIVE_INFINITY;
  for (const v of valid) {
    const d = distance(name.toLowerCase(), v);
    if (d < bestD) {
      bestD = d;
      best = v;
    }
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(name.length / 3)) ? best : undefined;
}

function describeIssues(tool: string, issues: readonly z.core.$ZodIssue[]): string {
  const parts = issues.slice(0, 8).map((i) => {
    const where = i.path.length > 0 ? `\`${i.path.map(String).join('.')}\`` : 'the arguments';
    return `${where}: ${i.message}`;
  });
  const more = issues.length > 8 ? ` (and ${issues.length - 8} more)` : '';
  return `invalid arguments for ${tool}: ${parts.join('; ')}${more}. Fix them and call ${tool} again.`;
}

export function createArgParser(tool: string, input: z.ZodObject): ArgParser {
  const valid = Object.keys(input.shape);
  const kv = kvProperties(input);
  const nestedKv = nestedKvProperties(input);
  return {
    parse(raw) {
      const args = raw === undefined || raw === null ? {} : raw;
      if (typeof args !== 'object' || Array.isArray(args)) {
        throw new ForkboxError('invalid_argument', `${tool} takes an object of named arguments.`);
      }
      const cleaned = dropNulls(args) as Record<string, unknown>;
      const unknown = Object.keys(cleaned).filter((k) => !valid.includes(k));
      if (unknown.length > 0) {
        const hints = unknown.map((u) => {
          const c = closest(u, valid);
          return c ? `'${u}' (did you mean '${c}'?)` : `'${u}'`;
        });
        throw new ForkboxError(
          'invalid_argument',
          `${tool} has no argument ${hints.join(', ')}. Its arguments are: ${valid.join(', ') || '(none)'}. Nothing was done; call it again with valid names.`,
          { unknown },
        );
      }
      for (const k of kv) if (k in cleaned) cleaned[k] = normalizeKv(cleaned[k]);
      for (const [k, inner] of nestedKv) {
        const obj = cleaned[k];
        if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) continue;
        const rec = obj as Record<string, unknown>;
        for (const p of inner) if (p in rec) rec[p] = normalizeKv(rec[p]);
      }
      const r = input.safeParse(cleaned);
      if (!r.success) throw new ForkboxError('invalid_argument', describeIssues(tool, r.error.issues));
      return r.data;
    },
  };
}
