/**
 * The one place where errors become MCP tool results. A ForkboxError is a tool execution error
 * (`isError: true`) whose text is its message — which says what to do next — plus its code, so the
 * model can correct itself. Protocol errors (unknown tool, malformed request) stay JSON-RPC errors: the
 * SDK raises those before a tool runs.
 *
 * The catalog's messages name CLI commands ("List sandboxes with 'forkbox ls'"), which a model talking
 * MCP cannot run: they are rewritten here into the tools it can call, and what only the host's operator
 * can do is said to be that.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { ForkboxError, toForkboxError } from '../../../domain/errors.ts';

const REWRITES: readonly [RegExp, string][] = [
  [
    /List sandboxes with 'forkbox ls'/g,
    'List sandboxes with sandbox_list (or omit `sandbox` to use your default one)',
  ],
  [/List snapshots with 'forkbox snapshot ls'/g, 'List snapshots with snapshot_list'],
  [
    /List them with 'forkbox templates ls', or define it with 'forkbox templates define [^']*'/g,
    'See template_list, or define it with template_define',
  ],
  [
    /\(run 'forkbox templates' on the host\)/g,
    "(pick an existing one with template_list, or import the modules with code_run; the host's operator can define templates with 'forkbox templates define')",
  ],
  [
    /List images with 'forkbox images ls', or build the default one with 'forkbox images build debian'/g,
    "See image_list; images are built on the host by its operator ('forkbox images build')",
  ],
  [/Resume it with 'forkbox resume [^']*'/g, 'Resume it with sandbox_resume'],
  [
    /Create a new one with 'forkbox create'/g,
    'Create a new one with sandbox_create, or omit `sandbox` to use your default one',
  ],
  [
    /\('forkbox images build debian'\)/g,
    "(the host's operator can build one with 'forkbox images build debian')",
  ],
  [/[Rr]un 'forkbox (doctor|gc)'/g, "ask the host's operator to run 'forkbox $1'"],
  [/\('forkbox ls', 'forkbox kill <id>'\)/g, '(sandbox_list, then sandbox_kill)'],
  [/Check 'forkbox doctor'/g, "Ask the host's operator to check 'forkbox doctor'"],
];

/** The message as an MCP caller should read it (tools instead of CLI commands). */
export function mcpMessage(message: string): string {
  let m = message;
  for (const [re, to] of REWRITES) m = m.replace(re, to);
  return m;
}

export function toolError(e: unknown): CallToolResult {
  const err = toForkboxError(e);
  return {
    content: [{ type: 'text', text: `${mcpMessage(err.message)} [code: ${err.code}]` }],
    isError: true,
  };
}

/** A tool-level failure the tool itself detects (ETag mismatch, 0 or 2 matches in file_edit…). */
export function toolFailure(code: ForkboxError['code'], message: string): never {
  throw new ForkboxError(code, message);
}
