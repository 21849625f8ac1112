/** The browser part of the API for one caller: its sandbox's browser, through the engine's parts. */

import type { BrowserAction } from '../../domain/browser.ts';
import { ForkboxError } from '../../domain/errors.ts';
import { runtimeId } from '../../domain/runtime-id.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { ForkboxApi } from '../api.ts';
import { fileApi } from '../api-files.ts';
import type { CallerContext } from '../caller.ts';
import type { EngineParts } from '../engine-parts.ts';
import { execApi } from '../execs/api-execs.ts';
import type { BrowserHost, Browsers } from '../ports.ts';

const missing = (e: unknown) => e instanceof ForkboxError && e.code === 'not_found';

export function browsersOf(p: EngineParts): Browsers {
  if (!p.browsers)
    throw new ForkboxError(
      'requirement_missing',
      'this daemon has no browser driver (its engine was made without one).',
    );
  return p.browsers;
}

/** What the browser of sandbox `rec` needs of it, through the caller's API (built when a browser starts). */
export function browserHost(p: EngineParts, ctx: CallerContext, rec: SandboxRecord): () => BrowserHost {
  const dial = p.runtime.ports?.dial?.bind(p.runtime.ports);
  if (!dial)
    throw new ForkboxError(
      'requirement_missing',
      `the ${p.runtime.name} runtime cannot reach a sandbox's ports.`,
    );
  return () => {
    const execs = execApi(p, ctx);
    const files = fileApi(p, ctx);
    return {
      tenant: rec.tenant,
      network: rec.network,
      exists: (path) =>
        files.statFile(rec.id, path).then(
          () => true,
          (e: unknown) => (missing(e) ? false : Promise.reject(e)),
        ),
      start: async (argv) => (await execs.startExec(rec.id, { argv })).id,
      async ended(execId) {
        const r = await execs.pollExec(rec.id, execId);
        if (!r.done) return null;
        const err = r.chunks
          .filter((c) => c.stream === 'stderr')
          .map((c) => c.data)
          .join('');
        return `${r.exec.state}${r.exec.exitCode === null ? '' : ` with status ${r.exec.exitCode}`}: ${err.slice(-2000)}`;
      },
      cancel: async (execId) => {
        await execs.cancelExec(rec.id, execId);
      },
      read: (path) =>
        files.readFile(rec.id, path).then(
          (f) => f.data.toString('utf8'),
          (e: unknown) => (missing(e) ? null : Promise.reject(e)),
        ),
      dial: (port) => dial(rec, port),
    };
  };
}

export function browserApi(p: EngineParts, ctx: CallerContext): Pick<ForkboxApi, 'browser'> {
  return {
    async browser(idOrName: string, action: BrowserAction) {
      const rec = p.running(ctx, idOrName);
      return browsersOf(p).act(runtimeId(rec), browserHost(p, ctx, rec), action);
    },
  };
}
