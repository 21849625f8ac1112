/**
 * Namespaces: a sandbox lives in one (default `default`); its name is unique among the live sandboxes of
 * its tenant and namespace. A reference `ns/name` names a sandbox of another namespace than the
 * caller's default (a sandbox name never contains '/'); `*` means every namespace where a list or a
 * filter takes one.
 */
import { errors } from './errors.ts';
import { NAME_RE, SIZES } from './limits.ts';

export const DEFAULT_NAMESPACE = 'default';
/** Every namespace the caller may see (list and metrics filters only). */
export const ALL_NAMESPACES = '*';

/** A namespace name: the sandbox name rule (1-63 letters, digits, '.', '_', '-'). */
export function checkNamespace(ns: string): string {
  if (typeof ns !== 'string' || !NAME_RE.test(ns)) {
    throw errors.invalid(
      `namespace '${String(ns)}' is not valid: use 1-${SIZES.nameChars} letters, digits, '.', '_' or '-', starting with a letter or digit ('*', all namespaces, only where a list takes one).`,
    );
  }
  return ns;
}

/** A sandbox reference split into its namespace (when qualified as `ns/name`) and the id or name. */
export function splitRef(ref: string): { namespace?: string; ref: string } {
  const slash = ref.indexOf('/');
  if (slash < 0) return { ref };
  return { namespace: ref.slice(0, slash), ref: ref.slice(slash + 1) };
}
