/**
 * A microsandbox tool: compatTool (compat-tool.ts) with microsandbox's result rule and error text.
 * `msb server` answered every call with ONE text block holding its internal JSON-RPC result
 * pretty-printed (serde_json's two-space indentation): a returned string is therefore a quoted JSON
 * string (`"Sandbox x started successfully"`), an object its indented JSON. No structuredContent.
 */
import type { z } from 'zod';
import { type CompatToolDef, compatTool } from '../../kit/compat-tool.ts';
import type { ToolsetTool } from '../../toolset.ts';
import { microsandboxErrorText } from './errors.ts';

export function msbTool<I extends z.ZodObject>(def: CompatToolDef<I>): ToolsetTool {
  return compatTool(
    { ...def, run: async (args, ctx) => JSON.stringify(await def.run(args, ctx), null, 2) },
    microsandboxErrorText,
  );
}
