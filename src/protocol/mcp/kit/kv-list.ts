/**
 * Name/value arguments (env, labels) as the portable form every client accepts: a list of `NAME=value`
 * strings. A map is what the API takes, so the list is turned into one after validation. The old map
 * form (`{"A": "1"}`) and `{name, value}` items are still accepted: tool-args.ts rewrites them into this
 * form before validation, for every property carrying the KV marker.
 */
import { z } from 'zod';
import { ENV_NAME_RE, SIZES } from '../../../domain/limits.ts';
import { KV_MARKER } from './portable-schema.ts';

export interface KvListOptions {
  /** What one item names, for messages ("variable", "label"). */
  what: string;
  maxItems: number;
  /** Pattern of the name part. */
  name: RegExp;
  maxName: number;
  maxValue: number;
}

function toRecord(items: string[], o: KvListOptions, ctx: z.RefinementCtx): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    const eq = item.indexOf('=');
    const name = item.slice(0, eq);
    const value = item.slice(eq + 1);
    if (!o.name.test(name) || name.length > o.maxName) {
      ctx.addIssue({ code: 'custom', message: `'${name}' is not a valid ${o.what} name` });
    } else if (value.length > o.maxValue) {
      ctx.addIssue({ code: 'custom', message: `the value of ${name} is over ${o.maxValue} characters` });
    } else {
      out[name] = value;
    }
  }
  return out;
}

/** A list of NAME=value strings, parsed into a map. */
export function kvList(o: KvListOptions) {
  return z
    .array(z.string().regex(/^[^=]+=/, `each item is NAME=value`))
    .max(o.maxItems)
    .transform((items, ctx) => toRecord(items, o, ctx))
    .meta({ [KV_MARKER]: true });
}

/** Rewrite the old map form and `{name, value}` items into NAME=value strings; leave anything else. */
export function normalizeKv(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map((item) => {
      if (typeof item !== 'object' || item === null) return item;
      const { name, value: v } = item as { name?: unknown; value?: unknown };
      return typeof name === 'string' && typeof v === 'string' ? `${name}=${v}` : item;
    });
  }
  if (typeof value === 'object' && value !== null) {
    return Object.entries(value).map(([k, v]) => (typeof v === 'string' ? `${k}=${v}` : { [k]: v }));
  }
  return value;
}

export const envArg = kvList({
  what: 'environment variable',
  maxItems: SIZES.envVars,
  name: ENV_NAME_RE,
  maxName: SIZES.envNameChars,
  maxValue: SIZES.envValueChars,
});

export const labelsArg = kvList({
  what: 'label',
  maxItems: SIZES.labels,
  name: /^[^=\s]+$/,
  maxName: SIZES.labelKeyChars,
  maxValue: SIZES.labelValueChars,
});
