/**
 * For the abuse tests of a sandbox or template that dies during its set-up: a broken variant of the
 * default image, and a create awaited with a bound far below the daemon's own start deadlines (which
 * these tests raise to ten minutes), so that only noticing the death can end it in time.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ImageRecord } from '../../src/domain/types.ts';
import type { CreateSandboxRequest } from '../../src/service/api.ts';
import type { AbuseDaemon } from './abuse.ts';
import { defaultImage } from './native.ts';
import { waitForEvent } from './wait-for.ts';

export const TEN_MINUTES = String(10 * 60_000);

/** Record image `name` in the state dir: the default image changed by `patch`, its id ending in `idTail`. */
export function writeImageVariant(
  stateDir: string,
  name: string,
  idTail: string,
  patch: Partial<ImageRecord>,
): void {
  const img = defaultImage();
  writeFileSync(
    join(stateDir, 'images', `${name}.json`),
    JSON.stringify({ ...img, name, id: `${img.id.slice(0, 64 - idTail.length)}${idTail}`, ...patch }),
  );
}

/** What a create ends in — its error, or `created <id>` — waited for at most a minute. */
export function createOutcome(
  d: AbuseDaemon,
  req: CreateSandboxRequest,
  what: string,
): Promise<string | (Error & { code?: string })> {
  const outcome = d.api.createSandbox(req).then(
    (sb) => `created ${sb.id}`,
    (e: Error & { code?: string }) => e,
  );
  return waitForEvent<string | (Error & { code?: string })>((cb) => void outcome.then(cb), {
    what,
    timeoutMs: 60_000,
  });
}
