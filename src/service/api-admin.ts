/** The host part of the API for one caller: template configs, images, gc, df. */
import { ForkboxError } from '../domain/errors.ts';
import type { ForkboxApi } from './api.ts';
import { type CallerContext, DEFAULT_TENANT } from './caller.ts';
import type { EngineParts } from './engine-parts.ts';

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
  return {
    defineTemplate: async (req) => templateConfigs.define(req, host),
    listTemplates: async () => templateConfigs.list(),
    deleteTemplate: (name) => templateConfigs.remove(name, host),

    listImages: async () => images.list(),
    buildImage: (req, onProgress) =>
      images.buildDebian({
        ...(req.name === undefined ? {} : { name: req.name }),
        ...(req.suite === undefined ? {} : { suite: req.suite }),
        ...(req.packages === undefined ? {} : { packages: req.packages }),
        ...(onProgress === undefined ? {} : { onProgress }),
      }),
    importImage: (name, source, onProgress) =>
      images.importImage(name, source, onProgress ? { onProgress } : {}),
    pullImage: (ref, onProgress) =>
      images.pull(ref, { remote: ctx.remote === true, ...(onProgress ? { onProgress } : {}) }),
    async removeImage(nameOrRef) {
      // A registry reference names the image it was pulled as: sandboxes record that local name.
      const name = images.require(nameOrRef).name;
      // The agent's runtime is in use by every live sandbox of an image without python3 too.
      const runsAgents = name === p.agentRuntimeImage;
      const users = store
        .listSandboxes({ states: ['creating', 'running', 'paused', 'killing'] })
        .filter((s) => s.image === name || (runsAgents && images.get(s.image)?.python === null));
      if (users.length > 0) {
        throw new ForkboxError(
          'conflict',
          `image '${name}' is used by ${users.length} live sandbox(es) (${users
            .slice(0, 5)
            .map((s) => s.id)
            .join(', ')}). Kill them first.`,
          { image: name },
        );
      }
      images.remove(name);
    },

    gc: () => p.gc(),
    df: () => p.df(),
  };
}
