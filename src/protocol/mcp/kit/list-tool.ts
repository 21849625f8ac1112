/**
 * The list tools (exec_list, image_list, port_list, snapshot_list, template_list): read-only, output one
 * field, an array of one shape. Each tool keeps its own file with its name, texts and the records it lists.
 */
import { z } from 'zod';
import type { ForkboxApi } from '../../../service/api.ts';
import { defineTool, HINTS, sandboxArg, type ToolContext, type ToolDef } from './tool-kit.ts';

export interface ListToolDef<K extends string, T, S extends z.ZodType> {
  name: string;
  title: string;
  description: string;
  /** The output's one field. */
  key: K;
  /** The shape of each of its items. */
  item: S;
  out(rec: T): z.input<S>;
}

function listOf<K extends string, T, S extends z.ZodType, I extends z.ZodObject>(
  def: ListToolDef<K, T, S>,
  input: I,
  records: (a: z.output<I>, ctx: ToolContext) => Promise<T[]>,
): ToolDef {
  const output = z.object({ [def.key]: z.array(def.item) } as Record<K, z.ZodArray<S>>);
  return defineTool({
    name: def.name,
    title: def.title,
    description: def.description,
    annotations: HINTS.read,
    input,
    output,
    async run(a, ctx) {
      const structured = { [def.key]: (await records(a, ctx)).map(def.out) };
      return { structured: structured as z.input<typeof output> };
    },
  });
}

/** A list of the caller's records (no arguments). */
export function listTool<K extends string, T, S extends z.ZodType>(
  def: ListToolDef<K, T, S> & { list(api: ForkboxApi): Promise<T[]> },
): ToolDef {
  return listOf(def, z.object({}), (_a, { api }) => def.list(api));
}

/** A list of one sandbox's records (argument `sandbox`, default: yours). */
export function sandboxListTool<K extends string, T, S extends z.ZodType>(
  def: ListToolDef<K, T, S> & { list(api: ForkboxApi, sandbox: string): Promise<T[]> },
): ToolDef {
  return listOf(def, z.object({ sandbox: sandboxArg }), async (a, { api, sandbox }) =>
    def.list(api, await sandbox(a.sandbox)),
  );
}
