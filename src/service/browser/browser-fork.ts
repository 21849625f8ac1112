/**
 * A fork of a sandbox whose browser is open: Chromium is not carried by a fork (only the Python
 * interpreter's memory is), so each child that was made opens the source's page in its own browser and
 * replays the actions taken on it since, in order (docs/BROWSER.md, "Forks"). A child whose replay fails
 * is kept, without its browser or with it part-way; the result says which.
 */
import { runtimeId } from '../../domain/runtime-id.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { BrowserReplay, ForkResult } from '../api.ts';
import type { CallerContext } from '../caller.ts';
import type { EngineParts } from '../engine-parts.ts';
import { browserHost } from './api-browser.ts';

export async function replayBrowser(
  p: EngineParts,
  ctx: CallerContext,
  source: SandboxRecord,
  out: ForkResult,
): Promise<ForkResult> {
  const browsers = p.browsers;
  const history = browsers?.history(runtimeId(source));
  const plan = history?.steps;
  const first = plan?.[0]?.action;
  if (!browsers || !plan || first?.action !== 'open') return out;
  const made = out.children.flatMap((c) => (c.ok && c.sandbox ? [c.sandbox.id] : []));
  const children = await Promise.all(
    made.map(async (id): Promise<BrowserReplay> => {
      try {
        const rec = p.running(ctx, id);
        await browsers.replay(runtimeId(rec), browserHost(p, ctx, rec), plan);
        return { id, ok: true };
      } catch (e) {
        return { id, ok: false, error: e instanceof Error ? e.message : String(e) };
      }
    }),
  );
  const failed = children.filter((c) => !c.ok);
  // In words too, for clients that read only them (MCP's sandbox_fork shows not_carried).
  const partial =
    history?.complete === false ? " (only the first ones: the source's later actions were not kept)" : '';
  const words = `the browser, live: each child opened ${first.url} and replayed ${plan.length - 1} action(s) on it${partial}${failed.length > 0 ? `; failed in ${failed.map((c) => `${c.id} (${c.error})`).join(', ')}` : ''}`;
  return {
    ...out,
    notCarried: [...out.notCarried, words],
    browser: {
      carried: 'replayed',
      url: first.url,
      actions: plan.length - 1,
      complete: history?.complete !== false,
      children,
    },
  };
}
