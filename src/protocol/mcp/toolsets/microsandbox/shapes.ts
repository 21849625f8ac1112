/**
 * What microsandbox's tools share: a sandbox is named by `sandbox` in a `namespace` (both required, as
 * `msb server` required them), found in forkbox as the reference `namespace/name`; output as
 * microsandbox's portal returned it, a list of `{stream, text}` lines.
 */
import { nameSchema, namespaceSchema } from '../../../bounds.ts';

export const sandboxArg = nameSchema().describe('Name of the sandbox');
export const namespaceArg = namespaceSchema().describe('Namespace of the sandbox');

/** forkbox's reference to a sandbox of a namespace. */
export const sandboxRef = (a: { sandbox: string; namespace: string }) => `${a.namespace}/${a.sandbox}`;

export interface OutputLine {
  stream: 'stdout' | 'stderr';
  text: string;
}

/** A stream's text as microsandbox's lines (each without its newline; no empty last line). */
export function lines(stream: OutputLine['stream'], text: string): OutputLine[] {
  if (text.length === 0) return [];
  const parts = text.split('\n');
  if (parts.at(-1) === '') parts.pop();
  return parts.map((t) => ({ stream, text: t }));
}
