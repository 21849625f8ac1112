/**
 * Portable JSON Schemas for tools/list. Every tool's zod input schema is converted once and reduced to
 * the keywords that Gemini function declarations (an OpenAPI 3.0 subset), OpenAI strict function
 * schemas and the MCP SDKs all accept (docs/MCP-CLIENTS.md lists the rules and their sources):
 *
 * - kept: type (one name), description, enum, properties, required, items, minItems, maxItems,
 *   minimum, maximum (but not the bounds that only guard against nonsense: guardOnly below);
 * - dropped, because the server validates them anyway (and says what is wrong): `$schema`, `title`,
 *   `pattern`, `minLength`/`maxLength`, `additionalProperties: false`, `propertyNames`, zod's ±2^53
 *   integer bounds and `x-forkbox-*` markers;
 * - refused at start-up (a bug in a tool's definition, caught by the unit tests): anything that cannot be
 *   said in the subset — maps (an object without `properties`), unions, nullable types, `$ref`.
 *
 * Output schemas get the light treatment (no `$schema`, `title`, `propertyNames`, and no `required`:
 * they describe results, which no model has to produce, and every tools/list token is paid on every
 * turn — fields described as optional are the only ones a result may lack).
 */
import { z } from 'zod';

/** Keywords an advertised input schema may use (the intersection of the three dialects). */
export const PORTABLE_KEYWORDS: ReadonlySet<string> = new Set([
  'type',
  'description',
  'enum',
  'properties',
  'required',
  'items',
  'minItems',
  'maxItems',
  'minimum',
  'maximum',
]);

/** Set on a zod schema (with `.meta`) to mark a list of NAME=value strings (see kv-list.ts). */
export const KV_MARKER = 'x-forkbox-kv';

const SILENTLY_DROPPED = new Set([
  '$schema',
  'title',
  'pattern',
  'minLength',
  'maxLength',
  'additionalProperties',
  'propertyNames',
  'default',
  KV_MARKER,
]);
const TYPES = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean']);

export type JsonSchema = { [k: string]: unknown };

function fail(path: string, why: string): never {
  throw new Error(`tool input schema at ${path || '(root)'} is not portable: ${why}`);
}

/**
 * Bounds that only guard against nonsense are left to validation (whose error names them), not paid for
 * in every turn's tokens: zod's integer bounds, a minimum from 0 to 16 (counts, offsets, sizes, a 16 MiB
 * memory floor, a 0.1 s timeout floor) and a maximum over 2 MiB (a 30-day TTL, disk sizes, inode counts).
 * Bounds a model plans with stay advertised: a negative minimum (after_seq -1), the 1 MiB page and output
 * sizes, a poll's 25 s, a fork's 100 children.
 */
function guardOnly(k: 'minimum' | 'maximum', v: number): boolean {
  if (Math.abs(v) >= Number.MAX_SAFE_INTEGER) return true;
  return k === 'minimum' ? v >= 0 && v <= 16 : v > 2 * 1024 * 1024;
}

function portableNode(node: JsonSchema, path: string, defaults: boolean): JsonSchema {
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === 'default' && defaults) {
      out[k] = v;
      continue;
    }
    if (SILENTLY_DROPPED.has(k)) {
      if (k === 'additionalProperties' && v !== false) fail(path, 'a map (additionalProperties schema)');
      continue;
    }
    if (!PORTABLE_KEYWORDS.has(k)) fail(path, `keyword '${k}'`);
    if (k === 'type' && (typeof v !== 'string' || !TYPES.has(v))) fail(path, `type ${JSON.stringify(v)}`);
    if ((k === 'minimum' || k === 'maximum') && typeof v === 'number' && guardOnly(k, v)) continue;
    if (k === 'properties') {
      const props: JsonSchema = {};
      for (const [name, sub] of Object.entries(v as Record<string, JsonSchema>)) {
        props[name] = portableNode(sub, `${path}.${name}`, defaults);
      }
      out[k] = props;
    } else if (k === 'items') {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(path, 'items must be one schema');
      out[k] = portableNode(v as JsonSchema, `${path}[]`, defaults);
    } else {
      out[k] = v;
    }
  }
  if (out.type === undefined) fail(path, 'no type');
  if (out.type === 'object' && out.properties === undefined) fail(path, 'an object without properties');
  if (out.type === 'array' && out.items === undefined) fail(path, 'an array without items');
  return out;
}

/** The zod input schema as JSON Schema (draft 2020-12, before reduction). */
export function rawInputJsonSchema(input: z.ZodObject): JsonSchema {
  return z.toJSONSchema(input, { io: 'input', target: 'draft-2020-12' }) as JsonSchema;
}

/**
 * The advertised (portable) input schema of a tool. Throws when the zod schema cannot be expressed.
 * `defaults`: keep each argument's `default` (compatibility toolsets advertise their system's defaults,
 * as that system's server did; the canonical toolset says them in the descriptions, fewer tokens).
 */
export function portableInputSchema(input: z.ZodObject, opts: { defaults?: boolean } = {}): JsonSchema {
  const out = portableNode(rawInputJsonSchema(input), '', opts.defaults === true);
  if (out.type !== 'object') fail('', 'the root must be an object');
  if (out.properties === undefined) out.properties = {};
  return out;
}

function lightNode(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(lightNode);
  if (typeof node !== 'object' || node === null) return node;
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$schema' || k === 'title' || k === 'propertyNames' || k === 'required') continue;
    if (k === 'additionalProperties' && v === false) continue;
    if (
      (k === 'minimum' || k === 'maximum') &&
      typeof v === 'number' &&
      Math.abs(v) >= Number.MAX_SAFE_INTEGER
    )
      continue;
    // `properties` maps names to schemas: keep every name, lighten each schema.
    out[k] =
      k === 'properties' && typeof v === 'object' && v !== null
        ? Object.fromEntries(Object.entries(v).map(([n, s]) => [n, lightNode(s)]))
        : lightNode(v);
  }
  return out;
}

/** The advertised output schema of a tool. */
export function advertisedOutputSchema(output: z.ZodObject): JsonSchema {
  return lightNode(z.toJSONSchema(output, { io: 'output', target: 'draft-2020-12' })) as JsonSchema;
}

/** Names of the top-level properties marked as NAME=value lists (they also accept the old map form). */
export function kvProperties(input: z.ZodObject): Set<string> {
  const props = (rawInputJsonSchema(input).properties ?? {}) as Record<string, JsonSchema>;
  return new Set(Object.entries(props).flatMap(([k, s]) => (s[KV_MARKER] === true ? [k] : [])));
}

/**
 * NAME=value list properties one level down, by the top-level object property holding them (toolsets
 * whose system wrapped every tool's arguments in one object, as DevBench's `input_data`).
 */
export function nestedKvProperties(input: z.ZodObject): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const props = (rawInputJsonSchema(input).properties ?? {}) as Record<string, JsonSchema>;
  for (const [k, s] of Object.entries(props)) {
    const inner = (s.properties ?? {}) as Record<string, JsonSchema>;
    const kv = Object.entries(inner).flatMap(([n, x]) => (x[KV_MARKER] === true ? [n] : []));
    if (kv.length > 0) out.set(k, new Set(kv));
  }
  return out;
}
