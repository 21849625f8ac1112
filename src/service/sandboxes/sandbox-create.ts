/** Creating a sandbox: resolve its template config, validate, record it, ask the runtime, settle its state. */
import { randomBytes } from 'node:crypto';
import { ForkboxError } from '../../domain/errors.ts';
import type { RuntimeName } from '../../domain/runtime-id.ts';
import { isLive } from '../../domain/sandbox-state.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { CreateOptions, CreateSandboxRequest } from '../api.ts';
import { type CallerContext, namespaceFor } from '../caller.ts';
import type { ImageStore, Runtime, Store } from '../ports.ts';
import { checkEnv, checkLabels, checkName, checkRuntime, checkTtl, limitsFrom } from '../validate.ts';
import { POOL_TENANT, type WarmPool } from '../warm-pool.ts';
import type { DiskPolicy } from './disk-limits.ts';
import { DEFAULT_NETWORK_CAP, type NetworkCap, networkFor } from './network-cap.ts';
import { resolveProject } from './project-spec.ts';
import { capabilitiesOf, defaultRuntime, offeredRuntimes } from './runtime-choice.ts';
import type { TemplateConfigs } from './template-configs.ts';

export type CreateSandbox = (
  ctx: CallerContext,
  req: CreateSandboxRequest,
  lowers?: string[],
  opts?: CreateOptions,
) => Promise<SandboxRecord>;

export function createSandboxMaker(deps: {
  store: Store;
  runtime: Runtime;
  templateConfigs: Pick<TemplateConfigs, 'resolve'>;
  now: () => number;
  /** The daemon's disk default and maximum (none: no disk limit is checked or applied by default). */
  disk?: DiskPolicy;
  /** The daemon's cap on network policies (default: any allow list). */
  networkCap?: NetworkCap;
  /** Host directories under which a project may be (none: projects are refused). */
  projectRoots?: readonly string[];
  /** Pulls an image named by a registry reference on first use. */
  images?: Pick<ImageStore, 'ensure'>;
  /** The warm pool: a ready sandbox for a create it can serve (service/warm-pool.ts). */
  pool?: () => Pick<WarmPool, 'take'> | undefined;
}): CreateSandbox {
  const { store, runtime, now } = deps;

  function newRecord(
    ctx: CallerContext,
    req: CreateSandboxRequest,
  ): { rec: SandboxRecord; prewarm: string[]; made: RuntimeName } {
    checkLabels(req.labels);
    // The runtime that will make it: what it can do decides what the create may ask for.
    const made = checkRuntime(req.runtime, offeredRuntimes(runtime)) ?? defaultRuntime(runtime);
    const network = networkFor(deps.networkCap ?? DEFAULT_NETWORK_CAP, req.network);
    if (network.mode !== 'none' && !capabilitiesOf(runtime, made).network)
      throw new ForkboxError(
        'requirement_missing',
        `the ${made} runtime has no network egress: create the sandbox with network 'none'.`,
      );
    // The named template config (or 'default') picks the image and the modules it starts with.
    const tpl = deps.templateConfigs.resolve(req);
    const limits = limitsFrom(req, deps.disk);
    const ttl = checkTtl(req.ttlSeconds);
    const env = checkEnv(req.env);
    const id = `sb-${randomBytes(5).toString('hex')}`;
    const name = req.name === undefined ? id : checkName(req.name);
    const namespace = namespaceFor(ctx, req.namespace);
    const sameName = req.name === undefined ? undefined : store.getSandboxByName(name, ctx.tenant, namespace);
    if (sameName && isLive(sameName.state)) {
      throw new ForkboxError(
        'already_exists',
        `a live sandbox in namespace '${namespace}' is already named '${name}'. Pick another name or kill it first.`,
        { name, namespace },
      );
    }
    const t = now();
    const rec: SandboxRecord = {
      id,
      name,
      state: 'creating',
      image: tpl.image.name,
      templateId: '',
      parentId: null,
      depth: 0,
      limits,
      env,
      labels: tpl.labels,
      expiresAt: ttl === undefined ? null : t + ttl * 1000,
      createdAt: t,
      updatedAt: t,
      hostPid: null,
      runtime: {},
      endReason: null,
      tenant: ctx.tenant,
      namespace,
      session: req.persistent === true ? null : (ctx.session ?? null),
      network,
    };
    return { rec, prewarm: tpl.prewarm, made };
  }

  return async (ctx, asked, lowers, opts) => {
    let req = asked;
    // A registry reference (local image names have no '/') is pulled on first use, under the daemon's
    // --image-allow list; the sandbox then records the local name it is stored under.
    if (req.image?.includes('/') && deps.images) {
      const img = await deps.images.ensure(req.image, {
        remote: ctx.remote === true,
        ...(opts?.onProgress ? { onProgress: opts.onProgress } : {}),
      });
      req = { ...req, image: img.name };
    }
    const { rec, prewarm, made } = newRecord(ctx, req);
    // Host directories are the host's: only its own socket (CLI, stdio MCP) may ask for one.
    if (req.project !== undefined && ctx.remote === true)
      throw new ForkboxError(
        'permission_denied',
        "projects (host directories) are served only on the daemon's local socket; create the sandbox with 'forkbox create --project' on the host.",
      );
    const project =
      req.project === undefined ? undefined : resolveProject(req.project, deps.projectRoots ?? []);
    // The pool's own refills are never served from it, nor a create for another runtime than the
    // default (pooled sandboxes are the default runtime's).
    const taken =
      ctx.tenant === POOL_TENANT || made !== defaultRuntime(runtime)
        ? undefined
        : deps.pool?.()?.take(rec, {
            named: req.name !== undefined,
            project: project !== undefined,
            lowers: lowers !== undefined,
          });
    if (taken) return taken;
    store.insertSandbox(rec);
    try {
      const h = await runtime.createSandbox({
        id: rec.id,
        name: rec.name,
        // A pooled sandbox is made from the templates of the tenant it waits for.
        group: ctx.poolFor ?? rec.tenant,
        image: rec.image,
        limits: rec.limits,
        env: rec.env,
        network: rec.network,
        ...(lowers ? { lowers } : {}),
        ...(project ? { project } : {}),
        // Always named: the runtime whose capabilities were checked (and the pool's) makes it.
        runtime: made,
        prewarm,
      });
      const templateId = typeof h.runtime.templateId === 'string' ? h.runtime.templateId : '';
      return store.transitionSandbox(rec.id, 'running', {
        hostPid: h.hostPid,
        runtime: h.runtime,
        templateId,
      });
    } catch (e) {
      try {
        store.transitionSandbox(rec.id, 'failed', { endReason: e instanceof Error ? e.message : String(e) });
      } catch {
        // already moved on
      }
      throw e;
    }
  };
}
