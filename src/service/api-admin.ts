/** The host part of the API for one caller: template configs, images, gc, df. */
import { ForkboxError } from '../domain/errors.ts';
import type { ForkboxApi } from './api.ts';
import { type CallerContext, DEFAULT_TENANT, requireHostTenant } from './caller.ts';
import type { EngineParts } from './engine-parts.ts';
import { POOL_TENANT } from './warm-pool.ts';

type AdminApi = Pick<
  ForkboxApi,
  | 'defineTemplate'
  | 'listTemplates'
  | 'deleteTemplate'
  | 'listImages'
  | 'buildImage'
  | 'importImage'
  | 'pullImage'
  | 'removeImage'
  | 'gc'
  | 'df'
>;

export function adminApi(p: EngineParts, ctx: CallerContext): AdminApi {
  const { images, store, templateConfigs } = p;
  const host = { tenant: ctx.tenant, hostTenant: DEFAULT_TENANT };
  /** Live sandboxes on `name` — and, when it is the agents' runtime, those of images without python3. */
  const liveUsers = (name: string) => {
    const runsAgents = name === p.agentRuntimeImage;
    // Untaken pooled sandboxes do not count: the pool drops those of a changed or removed image.
    return store
      .listSandboxes({ states: ['creating', 'running', 'paused', 'killing'] })
      .filter((s) => s.tenant !== POOL_TENANT)
      .filter((s) => s.image === name || (runsAgents && images.get(s.image)?.python === null))
      .map((s) => s.id);
  };
  /**
   * Rebuilding an image in place changes the files under every sandbox and snapshot made from it (they
   * hold only their own changes): refused while any exists, so nothing silently moves to another base.
   */
  function refuseWhileUsed(name: string): void {
    const users = [
      ...liveUsers(name),
      ...store
        .listSnapshots()
        .filter((s) => s.image === name)
        .map((s) => s.id),
    ];
    if (users.length === 0) return;
    throw new ForkboxError(
      'conflict',
      `image '${name}' was built from another recipe and cannot be rebuilt in place: ${users.length} sandbox(es) or snapshot(s) use it (${users.slice(0, 5).join(', ')}). Kill or delete them, or build under another name with --name.`,
      { image: name },
    );
  }
  /** An image built or imported (perhaps in place of one): pooled sandboxes of its old files go. */
  async function afterImageChange<T>(work: Promise<T>): Promise<T> {
    const out = await work;
    p.pool.sync();
    return out;
  }
  return {
    async defineTemplate(req) {
      const out = templateConfigs.define(req, host);
      p.pool.sync(); // a changed image, modules or pool size: the stale or extra ones go, the rest fill
      return out;
    },
    listTemplates: async () => templateConfigs.list(),
    async deleteTemplate(name) {
      if (ctx.tenant === DEFAULT_TENANT) await p.pool.drain({ template: name });
      try {
        return await templateConfigs.remove(name, host);
      } finally {
        p.pool.sync();
      }
    },

    listImages: async () => images.list(),
    buildImage: async (req, onProgress) => {
      requireHostTenant(ctx, 'building an image', 'forkbox images build');
      return afterImageChange(
        images.buildDebian({
          ...(req.name === undefined ? {} : { name: req.name }),
          ...(req.suite === undefined ? {} : { suite: req.suite }),
          ...(req.packages === undefined ? {} : { packages: req.packages }),
          ...(req.browser === undefined ? {} : { browser: req.browser }),
          ...(onProgress === undefined ? {} : { onProgress }),
          mayReplace: (old) => refuseWhileUsed(old.name),
        }),
      );
    },
    importImage: async (name, source, onProgress) => {
      requireHostTenant(ctx, 'importing an image', 'forkbox images import');
      return afterImageChange(images.importImage(name, source, onProgress ? { onProgress } : {}));
    },
    pullImage: (ref, onProgress) =>
      images.pull(ref, { remote: ctx.remote === true, ...(onProgress ? { onProgress } : {}) }),
    async removeImage(nameOrRef) {
      requireHostTenant(ctx, 'removing an image', 'forkbox images rm');
      // A registry reference names the image it was pulled as: sandboxes record that local name.
      const name = images.require(nameOrRef).name;
      const users = liveUsers(name);
      if (users.length > 0) {
        throw new ForkboxError(
          'conflict',
          `image '${name}' is used by ${users.length} live sandbox(es) (${users.slice(0, 5).join(', ')}). Kill them first.`,
          { image: name },
        );
      }
      await p.pool.drain({ image: name });
      images.remove(name);
      p.pool.sync();
    },

    async gc() {
      requireHostTenant(ctx, 'garbage collection', 'forkbox gc');
      return p.gc();
    },
    async df() {
      requireHostTenant(ctx, 'disk usage of the whole state dir', 'forkbox df');
      return p.df();
    },
  };
}
