/**
 * Starting a sandbox again on its kept files after its processes ended with the host (a reboot, a
 * container restart): what it still held on the host (cgroups, mount points, sockets) goes, then it is
 * spawned afresh from its image's template on the layers it was made on, over its own upper dir. Its
 * files are back; its processes and Python state are not (docs/ARCHITECTURE.md, "Recovery").
 */
import { existsSync } from 'node:fs';
import { ForkboxError } from '../../domain/errors.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { CreateSandboxSpec, SandboxHandle } from '../../service/ports.ts';
import type { TemplateHandle } from './container/templates.ts';
import type { ReviveOpts } from './create-from-template.ts';
import { deadline } from './host/deadline.ts';
import type { ChildSpawner } from './spawn/child-spawner.ts';

export interface ReviveDeps {
  spawner: Pick<ChildSpawner, 'fromRecord' | 'releaseAllButFiles'>;
  templates: { get(id: string): TemplateHandle | undefined };
  create(spec: CreateSandboxSpec, revival: ReviveOpts): Promise<SandboxHandle>;
}

/** How long a still-running template (adopted at the same start-up) gets to reconnect. */
const TEMPLATE_RECONNECT_MS = 5000;

export function createRevive(deps: ReviveDeps) {
  return async function reviveSandbox(rec: SandboxRecord): Promise<SandboxHandle> {
    const sb = deps.spawner.fromRecord(rec);
    const missing = sb.lowers.find((l) => !existsSync(l));
    if (sb.lowers.length === 0 || missing !== undefined)
      throw new ForkboxError(
        'sandbox_gone',
        `sandbox ${rec.id} cannot be started again: ${missing ? `its layer ${missing} is gone` : 'no layers are recorded for it'}.`,
      );
    await deps.spawner.releaseAllButFiles(sb);
    // Its own template when it still runs (only the sandboxes died), else the image's, started anew.
    const tpl = deps.templates.get(rec.templateId);
    if (tpl && !tpl.conn)
      await deadline<void>(TEMPLATE_RECONNECT_MS, `template ${tpl.id} reconnecting`, (resolve) => {
        void tpl.ready.then(resolve);
      }).catch(() => undefined);
    return deps.create(
      {
        id: sb.id,
        name: rec.name,
        group: rec.tenant,
        image: rec.image,
        limits: rec.limits,
        env: rec.env,
        lowers: sb.lowers,
        prewarm: [],
        network: rec.network,
      },
      { revive: true, template: tpl },
    );
  };
}
