/**
 * Named template configs (one template per (image, template config): docs/ARCHITECTURE.md, "Templates"). A config names an
 * image and Python modules to pre-import; every sandbox created from it is forked from a template whose
 * REPL worker already imported them, so it starts warm. 'default' (the default image, no modules) is
 * built in and always exists. Configs are host-wide: each distinct one may start a long-lived template
 * container, so only the host's own tenant may define or delete them.
 */
import { errors, ForkboxError } from '../../domain/errors.ts';
import { LIMITS } from '../../domain/limits.ts';
import type { Logger } from '../../domain/logger.ts';
import type { ImageRecord, SandboxRecord } from '../../domain/types.ts';
import type { CreateSandboxRequest, DefineTemplateRequest, TemplateInfo } from '../api.ts';
import type { Store, TemplateConfigRecord } from '../ports.ts';
import { checkBound } from '../validate.ts';

export const DEFAULT_TEMPLATE = 'default';
/** Label on sandboxes created from a named template: what deleteTemplate checks for users. */
export const TEMPLATE_LABEL = 'forkbox.template';
export const MAX_PREWARM_MODULES = 64;
/** A dotted Python module path of ASCII identifiers (no commas: the agent gets them comma-joined). */
const MODULE_RE = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const MAX_MODULE_CHARS = 200;

/** Validate and de-duplicate module names, keeping their order (imports may depend on it). */
export function checkPrewarm(modules: readonly unknown[] | undefined): string[] {
  const list = modules ?? [];
  if (!Array.isArray(list)) throw errors.invalid('prewarm must be a list of Python module names.');
  if (list.length > MAX_PREWARM_MODULES) {
    throw errors.invalid(
      `prewarm names ${list.length} modules; at most ${MAX_PREWARM_MODULES} are allowed. Pre-import the packages you need most.`,
      { limit: MAX_PREWARM_MODULES },
    );
  }
  const out: string[] = [];
  for (const m of list) {
    if (typeof m !== 'string' || m.length > MAX_MODULE_CHARS || !MODULE_RE.test(m)) {
      throw errors.invalid(
        `prewarm module ${JSON.stringify(m)} is not a Python module name: use dotted identifiers such as 'json' or 'email.mime.text'.`,
        { module: String(m) },
      );
    }
    if (!out.includes(m)) out.push(m);
  }
  return out;
}

export function checkTemplateName(name: string): string {
  if (typeof name !== 'string' || !/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/.test(name)) {
    throw errors.invalid(
      `template name '${String(name)}' is not valid: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit.`,
    );
  }
  return name;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function templateInfo(rec: TemplateConfigRecord): TemplateInfo {
  return {
    name: rec.name,
    image: rec.image,
    prewarm: rec.prewarm,
    pool: rec.pool ?? null,
    builtin: false,
    createdAt: iso(rec.createdAt),
    updatedAt: iso(rec.updatedAt),
  };
}

export interface TemplateConfigDeps {
  store: Store;
  images: { require(name: string): ImageRecord };
  defaultImage: string;
  now: () => number;
  /** Stop the template container of a deleted config when nothing uses it (Runtime.releaseTemplate). */
  release?: (image: string, prewarm: string[]) => Promise<boolean>;
  log?: Pick<Logger, 'warn'>;
}

/** What a create request resolves to: the image, the modules its template pre-imports, and its labels. */
export interface ResolvedTemplate {
  image: ImageRecord;
  prewarm: string[];
  labels: Record<string, string>;
}

export interface TemplateConfigs {
  /** Defines or redefines a named config (the host's tenant only; not 'default'). */
  define(req: DefineTemplateRequest, caller: { tenant: string; hostTenant: string }): TemplateInfo;
  /** The built-in 'default' config, then every defined one. */
  list(): TemplateInfo[];
  /** Deletes a config no live sandbox uses (host's tenant only), stopping its template if none shares it. */
  remove(name: string, caller: { tenant: string; hostTenant: string }): Promise<{ deleted: string }>;
  /** The image and prewarm list a create request asks for; labels carry the template's name. */
  resolve(req: CreateSandboxRequest): ResolvedTemplate;
}

export function createTemplateConfigs(deps: TemplateConfigDeps): TemplateConfigs {
  const { store, images, now } = deps;
  const builtin = (): TemplateInfo => ({
    name: DEFAULT_TEMPLATE,
    image: deps.defaultImage,
    prewarm: [],
    pool: null,
    builtin: true,
    createdAt: null,
    updatedAt: null,
  });

  function notFound(name: string): ForkboxError {
    return new ForkboxError(
      'not_found',
      `no template '${name}'. List them with 'forkbox templates ls', or define it with 'forkbox templates define ${name} --prewarm MODULES'.`,
      { template: name },
    );
  }

  function requireHost(tenant: string, hostTenant: string, what: string): void {
    if (tenant !== hostTenant) {
      throw new ForkboxError(
        'permission_denied',
        `${what} a template changes host-wide configuration; only the host's own tenant can (run 'forkbox templates' on the host).`,
      );
    }
  }

  /** Live sandboxes (any tenant) created from the named template, or forked from those. */
  function users(name: string): SandboxRecord[] {
    return store.listSandboxes({
      states: ['creating', 'running', 'paused', 'killing'],
      labels: { [TEMPLATE_LABEL]: name },
    });
  }

  return {
    define(req: DefineTemplateRequest, caller: { tenant: string; hostTenant: string }): TemplateInfo {
      requireHost(caller.tenant, caller.hostTenant, 'defining');
      const name = checkTemplateName(req.name);
      if (name === DEFAULT_TEMPLATE) {
        throw errors.invalid(
          `'${DEFAULT_TEMPLATE}' is the built-in template (the default image, nothing pre-imported) and cannot be redefined. Pick another name.`,
        );
      }
      const image = images.require(req.image ?? deps.defaultImage);
      const prewarm = checkPrewarm(req.prewarm);
      const pool = req.pool === undefined ? null : checkBound(LIMITS.pool, req.pool);
      const t = now();
      const prev = store.getTemplateConfig(name);
      const rec: TemplateConfigRecord = {
        name,
        image: image.name,
        prewarm,
        pool,
        createdAt: prev?.createdAt ?? t,
        updatedAt: t,
      };
      store.putTemplateConfig(rec);
      return templateInfo(store.getTemplateConfig(name) ?? rec);
    },

    list(): TemplateInfo[] {
      return [builtin(), ...store.listTemplateConfigs().map(templateInfo)];
    },

    async remove(name: string, caller: { tenant: string; hostTenant: string }): Promise<{ deleted: string }> {
      requireHost(caller.tenant, caller.hostTenant, 'deleting');
      if (name === DEFAULT_TEMPLATE) {
        throw errors.invalid(`'${DEFAULT_TEMPLATE}' is the built-in template and cannot be deleted.`);
      }
      const cfg = store.getTemplateConfig(name);
      if (!cfg) throw notFound(name);
      const using = users(name);
      if (using.length > 0) {
        const shown = using.slice(0, 10).map((s) => s.id);
        throw new ForkboxError(
          'conflict',
          `template '${name}' is used by ${using.length} live sandbox(es) (${shown.join(', ')}${using.length > shown.length ? ', ...' : ''}). Kill them first.`,
          { template: name, sandboxes: shown },
        );
      }
      store.deleteTemplateConfig(name);
      // Its template container would otherwise live on (across daemon restarts) with nothing to use it,
      // unless another config names the same image and modules.
      const same = (c: TemplateConfigRecord) =>
        c.image === cfg.image && JSON.stringify(c.prewarm) === JSON.stringify(cfg.prewarm);
      if (deps.release && cfg.prewarm.length > 0 && !store.listTemplateConfigs().some(same)) {
        await deps.release(cfg.image, cfg.prewarm).catch((e: unknown) => {
          deps.log?.warn({ template: name, err: String(e) }, 'could not stop the template container');
          return false;
        });
      }
      return { deleted: name };
    },

    resolve(req: CreateSandboxRequest): ResolvedTemplate {
      // A caller may not claim a template through a label (it would block that template's deletion).
      const labels = { ...(req.labels ?? {}) };
      delete labels[TEMPLATE_LABEL];
      // 'default' pre-imports nothing, so any image goes with it (one template per image).
      if (req.template === undefined || req.template === DEFAULT_TEMPLATE) {
        return { image: images.require(req.image ?? deps.defaultImage), prewarm: [], labels };
      }
      const cfg = store.getTemplateConfig(req.template);
      if (!cfg) throw notFound(req.template);
      if (req.image !== undefined && req.image !== cfg.image) {
        throw errors.invalid(
          `template '${cfg.name}' uses image '${cfg.image}', but the request asks for image '${req.image}'. Leave out the image, or define a template for '${req.image}'.`,
          { template: cfg.name, image: req.image },
        );
      }
      return {
        image: images.require(cfg.image),
        prewarm: cfg.prewarm,
        labels: { ...labels, [TEMPLATE_LABEL]: cfg.name },
      };
    },
  };
}
