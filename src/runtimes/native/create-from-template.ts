/**
 * Creating a sandbox from its image's template container: admission, the template (started on demand),
 * an optional project layer at the bottom of its lowers, then one child spawned from the template.
 */
import { ForkboxError } from '../../domain/errors.ts';
import type { ImageRecord } from '../../domain/types.ts';
import type { CreateSandboxSpec, ImageStore, SandboxHandle } from '../../service/ports.ts';
import type { AgentConnection } from './agent-link/agent-connection.ts';
import type { TemplateHandle, Templates } from './container/templates.ts';
import type { NativePaths } from './host/paths.ts';
import type { UidRange } from './host/uid-range.ts';
import { holdProjectLayer, makeProjectLayer } from './layers/project-layer.ts';
import type { Admit } from './runtime-admission.ts';
import type { ChildSpawner } from './spawn/child-spawner.ts';
import type { ChildUids, ParentRef } from './spawn/live-sandbox.ts';

export interface CreateFromTemplateDeps {
  paths: NativePaths;
  templates: Templates;
  images: Pick<ImageStore, 'require'>;
  uidRange: UidRange;
  admit: Admit;
  spawner: ChildSpawner;
}

/** A revival (revive-sandbox.ts): its dir is kept, it was admitted when made, and its template may still run. */
export interface ReviveOpts {
  revive: true;
  template: TemplateHandle | undefined;
}

/** Children of a template: each an unrelated sandbox with a new block of its range (none: a legacy template). */
export function newUids(tpl: TemplateHandle): ChildUids {
  return tpl.blocks ? { kind: 'new', template: tpl.id, blocks: tpl.blocks } : { kind: 'legacy' };
}

/** A connected template as the parent of a spawn, its children on `lowers` with host uids from `uids`. */
export function templateParent(
  tpl: TemplateHandle & { conn: AgentConnection },
  lowers: string[],
  uids: ChildUids = newUids(tpl),
): ParentRef {
  return { id: tpl.id, hostPid: tpl.hostPid, conn: tpl.conn, templateId: tpl.id, depth: -1, lowers, uids };
}

export function createFromTemplate(deps: CreateFromTemplateDeps) {
  const { paths, templates, images, spawner, admit } = deps;

  /**
   * Its own template when it still runs (a revival, same tenant), else one of its tenant's (started on
   * demand), with a block taken for it at once: two creates that found the same template's last free block
   * must not both count on it (the loser asks again, and gets a sibling template).
   */
  async function templateWithBlock(
    spec: CreateSandboxSpec,
    image: ImageRecord,
    own: TemplateHandle | undefined,
  ): Promise<{ tpl: TemplateHandle; uids: ChildUids }> {
    for (let tries = 0; ; tries++) {
      const tpl =
        tries === 0 && own?.conn && own.group === spec.group
          ? own
          : await templates.ensure(image, spec.prewarm, spec.group);
      if (!tpl.blocks) return { tpl, uids: { kind: 'legacy' } };
      const block = tpl.blocks.take();
      if (block)
        return { tpl, uids: { kind: 'reserved', template: tpl.id, blocks: tpl.blocks, index: block.index } };
      if (tries >= 3)
        throw new ForkboxError('busy', `every block of host uids of template ${tpl.id} is taken; try again.`);
    }
  }
  return async function createSandbox(spec: CreateSandboxSpec, revival?: ReviveOpts): Promise<SandboxHandle> {
    if (!revival) await admit([spec]);
    const image = images.require(spec.image);
    let lowers = spec.lowers ?? image.layers;
    let unhold: () => void = () => undefined;
    if (spec.project) {
      // The project layer goes at the bottom of what the sandbox writes over (layers/project-layer.ts).
      const p = await makeProjectLayer(paths.projects, spec.id, spec.project, deps.uidRange, lowers);
      unhold = holdProjectLayer(p);
      lowers = [p, ...lowers];
    }
    try {
      // Taken last, with nothing awaited before the spawn takes it over (its release is the spawn's then).
      const { tpl, uids } = await templateWithBlock(spec, image, revival?.template);
      const { conn } = tpl;
      if (!conn) {
        if (uids.kind === 'reserved') uids.blocks.release(uids.index);
        throw new ForkboxError('unavailable', `template ${tpl.id} is not connected; try again.`);
      }
      const [out] = await spawner.spawn(
        templateParent({ ...tpl, conn }, lowers, uids),
        [
          {
            id: spec.id,
            name: spec.name,
            env: spec.env,
            limits: spec.limits,
            forkIndex: 0,
            ...(spec.network ? { network: spec.network } : {}),
            ...(revival ? { reuseDir: true } : {}),
          },
        ],
        null,
      );
      if (!out) throw new ForkboxError('internal', 'no result for the new sandbox');
      if (!out.ok) throw out.error;
      return out.handle;
    } catch (e) {
      unhold();
      if (spec.project) await spawner.collectLayers().catch(() => undefined); // its project layer goes now
      throw e;
    } finally {
      unhold();
    }
  };
}
