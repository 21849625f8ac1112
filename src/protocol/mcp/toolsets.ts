/**
 * Toolsets: named lists of tools a server can expose. `forkbox` is the canonical set; compatibility
 * toolsets (tool names and shapes other sandbox MCP servers use) are added here as more lists.
 */
import { ForkboxError } from '../../domain/errors.ts';
import type { ToolDef } from './tool-kit.ts';
import { CANONICAL_TOOLS } from './tools/index.ts';

export const DEFAULT_TOOLSET = 'forkbox';

export const TOOLSETS: Readonly<Record<string, readonly ToolDef[]>> = {
  forkbox: CANONICAL_TOOLS,
};

/** The tools of the named toolsets, in order, each name once (the first toolset naming it wins). */
export function selectTools(names: readonly string[] = [DEFAULT_TOOLSET]): ToolDef[] {
  const picked = new Map<string, ToolDef>();
  for (const n of names.length === 0 ? [DEFAULT_TOOLSET] : names) {
    const set = TOOLSETS[n];
    if (!set) {
      throw new ForkboxError(
        'invalid_argument',
        `unknown toolset '${n}'. Available: ${Object.keys(TOOLSETS).join(', ')}.`,
        { toolset: n },
      );
    }
    for (const t of set) if (!picked.has(t.name)) picked.set(t.name, t);
  }
  return [...picked.values()];
}
