/**
 * The one place where errors become MCP tool results. A ForkboxError is a tool execution error
 * (`isError: true`) whose text is its message — which already says what to do next — plus its code, so
 * the model can correct itself. Protocol errors (unknown tool, malformed request) stay JSON-RPC errors:
 * the SDK raises those before a tool runs.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { ForkboxError, toForkboxError } from '../../domain/errors.ts';

export function toolError(e: unknown): CallToolResult {
  const err = toForkboxError(e);
  return {
    content: [{ type: 'text', text: `${err.message} [code: ${err.code}]` }],
    isError: true,
  };
}

/** A tool-level failure the tool itself detects (ETag mismatch, 0 or 2 matches in file_edit…). */
export function toolFailure(code: ForkboxError['code'], message: string): never {
  throw new ForkboxError(code, message);
}
