/**
 * One Runtime port over several runtimes: each sandbox is served by the runtime that made it (its
 * record's `runtime.kind`, domain/runtime-id.ts), a create by the runtime it names (else the default),
 * and a fork, snapshot or restore stays on its source's. The engine sees one runtime, `runtimes` tells
 * it which a create may name and what each can do.
 */
import { ForkboxError } from '../domain/errors.ts';
import { type RuntimeName, runtimeKind } from '../domain/runtime-id.ts';
import type { SandboxRecord, TemplateRecord } from '../domain/types.ts';
import type { Runtime, RuntimeCapabilities } from '../service/ports.ts';

export interface RuntimeRouterDeps {
  /** The runtime of records that name none, and of creates that name none unless `defaultRuntime` says. */
  native: Runtime;
  gvisor?: Runtime;
  /** What a create that names no runtime gets (default native). */
  defaultRuntime?: RuntimeName;
}

export function createRuntimeRouter(deps: RuntimeRouterDeps): Runtime {
  const { native, gvisor } = deps;
  const byName = (name: RuntimeName): Runtime => {
    if (name === 'native') return native;
    if (gvisor) return gvisor;
    throw new ForkboxError(
      'unavailable',
      "the gvisor runtime needs runsc: run `npm run setup` as root (it installs runsc from Debian's backports), then restart the daemon.",
      { runtime: name },
    );
  };
  const of = (rec: SandboxRecord): Runtime => byName(runtimeKind(rec));
  const defaultName = deps.defaultRuntime ?? 'native';
  const runtimes: Partial<Record<RuntimeName, RuntimeCapabilities>> = {
    native: native.capabilities,
    ...(gvisor ? { gvisor: gvisor.capabilities } : {}),
  };
  const optional = <K extends keyof Runtime>(rec: SandboxRecord, key: K): NonNullable<Runtime[K]> => {
    const r = of(rec);
    const f = r[key];
    if (typeof f !== 'function')
      throw new ForkboxError(
        'invalid_argument',
        `the ${r.name} runtime does not support this call for sandbox '${rec.id}'; create the sandbox with runtime native for it.`,
        { runtime: r.name },
      );
    return (f as (...a: unknown[]) => unknown).bind(r) as NonNullable<Runtime[K]>;
  };

  // The engine reads `name` and `capabilities` as the default runtime's (the one a create naming none gets).
  const router: Runtime = {
    name: defaultName,
    capabilities: runtimes[defaultName] ?? native.capabilities,
    runtimes,
    ...(native.ports ? { ports: native.ports } : {}),
    runtimeOf: (rec) => runtimeKind(rec),
    setEvents(e) {
      native.setEvents?.(e);
      gvisor?.setEvents?.(e);
    },
    async recover(live: SandboxRecord[], templates: TemplateRecord[], deadlineMs: number) {
      const mine = (name: RuntimeName) => live.filter((r) => runtimeKind(r) === name);
      const a = await native.recover(mine('native'), templates, deadlineMs);
      const g = mine('gvisor');
      // Always asked: it also removes what a crash left under its root.
      const b = gvisor ? await gvisor.recover(g, [], deadlineMs) : { lost: g.map((r) => r.id) };
      return { lost: [...a.lost, ...b.lost] };
    },
    createSandbox: (spec) => byName(spec.runtime ?? defaultName).createSandbox(spec),
    reviveSandbox: (rec) => optional(rec, 'reviveSandbox')(rec),
    forkSandbox: (source, children, opts) => of(source).forkSandbox(source, children, opts),
    killSandbox: (rec, opts) => of(rec).killSandbox(rec, opts),
    pauseSandbox: (rec) => of(rec).pauseSandbox(rec),
    resumeSandbox: (rec) => of(rec).resumeSandbox(rec),
    usage: (rec) => of(rec).usage(rec),
    exec: (rec, spec, events) => of(rec).exec(rec, spec, events),
    prepareExecs: (rec) => of(rec).prepareExecs?.(rec) ?? Promise.resolve(),
    killExecTree: (rec, tree) => of(rec).killExecTree(rec, tree),
    execTreeSize: (rec, tree) => of(rec).execTreeSize(rec, tree),
    recoverExecs: (rec, running, keep) => of(rec).recoverExecs(rec, running, keep),
    replEval: (rec, code, opts) => of(rec).replEval(rec, code, opts),
    replRestart: (rec) => of(rec).replRestart(rec),
    readFile: (rec, path, opts) => of(rec).readFile(rec, path, opts),
    writeFile: (rec, path, data, opts) => of(rec).writeFile(rec, path, data, opts),
    listFiles: (rec, path, opts) => of(rec).listFiles(rec, path, opts),
    statFile: (rec, path) => of(rec).statFile(rec, path),
    deleteFile: (rec, path, opts) => of(rec).deleteFile(rec, path, opts),
    mkdir: (rec, path, opts) => of(rec).mkdir(rec, path, opts),
    moveFile: (rec, from, to, opts) => of(rec).moveFile(rec, from, to, opts),
    layerChain: (rec) => of(rec).layerChain(rec),
    diffLayers: (a, b, o) => native.diffLayers(a, b, o),
    projectChain: (rec) => (runtimeKind(rec) === 'native' ? (native.projectChain?.(rec) ?? null) : null),
    ...(native.projectRenames ? { projectRenames: native.projectRenames.bind(native) } : {}),
    ...(native.projectPatch ? { projectPatch: native.projectPatch.bind(native) } : {}),
    ...(native.applyProject ? { applyProject: native.applyProject.bind(native) } : {}),
    ...(native.releaseTemplate ? { releaseTemplate: native.releaseTemplate.bind(native) } : {}),
    async shutdown(opts) {
      await gvisor?.shutdown(opts);
      await native.shutdown(opts);
    },
  };
  return router;
}
