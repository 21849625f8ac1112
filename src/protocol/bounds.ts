/**
 * The bounds of domain/limits.ts as zod schemas, for the MCP tool inputs and the REST/OpenAPI schemas:
 * each surface states a range by naming the bound, never by repeating its numbers.
 */
import { z } from 'zod';
import { type Bound, ENV_NAME_RE, NAME_RE, SIZES, withinBound } from '../domain/limits.ts';

/** A JSON number within the bound (whole when the bound is). */
export function boundedNumber(b: Bound) {
  const n = b.integer ? z.number().int() : z.number();
  return n.min(b.min).max(b.max);
}

/** A query-string number within the bound (`?after_seq=-1`). */
export function boundedQueryNumber(b: Bound) {
  return z
    .string()
    .regex(b.integer ? /^-?\d{1,16}$/ : /^-?\d{1,16}(\.\d{1,9})?$/, b.integer ? 'an integer' : 'a number')
    .transform(Number)
    .refine((n) => withinBound(b, n), `from ${b.min} to ${b.max}`);
}

/** A sandbox, snapshot or template name. */
export const nameSchema = () =>
  z
    .string()
    .min(1)
    .max(SIZES.nameChars)
    .regex(NAME_RE, 'letters, digits, _ . - and starting with a letter or digit');

/** A namespace (the name rule), or `*` (every namespace) where `all` allows it. */
export const namespaceSchema = (opts: { all?: boolean } = {}) =>
  opts.all
    ? z
        .string()
        .max(SIZES.nameChars)
        .regex(/^(\*|[a-zA-Z0-9][a-zA-Z0-9_.-]*)$/, "a namespace name, or '*' for all")
    : nameSchema().describe('a namespace (default: the caller’s, `default`)');

/** An id or a name of a sandbox or a snapshot. */
export const refSchema = () => z.string().min(1).max(SIZES.refChars);

/** A path inside a sandbox. */
export const pathSchema = () => z.string().min(1).max(SIZES.pathChars);

/** Environment variables: valid names, bounded values and count. */
export const envSchema = () =>
  z
    .record(z.string().max(SIZES.envNameChars).regex(ENV_NAME_RE), z.string().max(SIZES.envValueChars))
    .refine((r) => Object.keys(r).length <= SIZES.envVars, `at most ${SIZES.envVars} variables`);

/** Labels: bounded keys, values and count. */
export const labelsSchema = () =>
  z
    .record(z.string().min(1).max(SIZES.labelKeyChars), z.string().max(SIZES.labelValueChars))
    .refine((r) => Object.keys(r).length <= SIZES.labels, `at most ${SIZES.labels} labels`);
