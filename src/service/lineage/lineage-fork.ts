/**
 * Forking a running sandbox into n children: their records (one transaction), the runtime's fork, and
 * what the children carried from the source and what they did not (docs/ARCHITECTURE.md, "Fork").
 */
import { randomBytes } from 'node:crypto';
import { errors, ForkboxError } from '../../domain/errors.ts';
import { isLive } from '../../domain/sandbox-state.ts';
import type { Limits, SandboxRecord } from '../../domain/types.ts';
import type { ForkChildResult, ForkRequest, ForkResult } from '../api.ts';
import type { ForkOutcome, Runtime, Store } from '../ports.ts';
import type { DiskPolicy } from '../sandboxes/disk-limits.ts';
import { capabilitiesOf, runtimeOfSandbox } from '../sandboxes/runtime-choice.ts';
import { info } from '../sandboxes/sandbox-info.ts';
import { SNAPSHOT_LABEL } from '../snapshots/snapshot-restore.ts';
import { checkEnv, checkForkCount, checkLabels, checkName, checkTtl, limitsFrom } from '../validate.ts';

export interface CallerRef {
  tenant: string;
  session?: string;
}

export interface ForkDeps {
  store: Store;
  runtime: Runtime;
  now: () => number;
  disk?: DiskPolicy;
  /** Whether a label names one sandbox's role (never inherited by a fork). */
  isRoleLabel(key: string): boolean;
}

/** What a fork is asked to do to its children's session and labels (a snapshot's holder, a restore). */
export interface ForkOptions {
  session?: string | null;
  dropLabels?: string[];
}

/** What every child gets from the request over its source. */
interface ChildTerms {
  limits: Limits;
  ttl: number | undefined;
  env: Record<string, string>;
  extraLabels: Record<string, string>;
}

/** The children's names, checked: n or none, none taken by a live sandbox in the source's namespace. */
function checkChildNames(
  store: Store,
  ctx: CallerRef,
  source: SandboxRecord,
  req: ForkRequest,
  n: number,
): string[] {
  if (req.names !== undefined && req.names.length !== n) {
    throw errors.invalid(`give exactly n = ${n} names, or none (got ${req.names.length}).`);
  }
  const names = (req.names ?? []).map(checkName);
  for (const name of names) {
    // Children live in the source's namespace (insertChildren copies it into their records).
    const same = store.getSandboxByName(name, ctx.tenant, source.namespace);
    if ((same && isLive(same.state)) || names.indexOf(name) !== names.lastIndexOf(name)) {
      throw new ForkboxError(
        'already_exists',
        `a live sandbox in namespace '${source.namespace}' is already named '${name}'. Pick other names.`,
        { name, namespace: source.namespace },
      );
    }
  }
  return names;
}

function childTerms(source: SandboxRecord, req: ForkRequest, disk: DiskPolicy | undefined): ChildTerms {
  // Children keep the source's disk limit unless given one (any value up to the daemon's maximum:
  // a child's limit covers its own writes only). A source made before disk limits gets the default.
  const inherit = (v: number, scale = 1) => (v > 0 ? Math.ceil(v / scale) : undefined);
  const limits = limitsFrom(
    {
      memoryMb: req.memoryMb ?? source.limits.memoryBytes / 2 ** 20,
      cpus: req.cpus ?? source.limits.cpus,
      pids: req.pids ?? source.limits.pids,
      diskMb: req.diskMb ?? inherit(source.limits.diskBytes, 2 ** 20),
      diskInodes: req.diskInodes ?? inherit(source.limits.diskInodes),
    },
    disk,
  );
  const ttl = checkTtl(req.ttlSeconds);
  const env = { ...source.env, ...checkEnv(req.env) };
  const extraLabels = checkLabels(req.labels);
  return { limits, ttl, env, extraLabels };
}

/** The children's records, in state `creating`. */
function insertChildren(
  deps: ForkDeps,
  source: SandboxRecord,
  terms: ChildTerms,
  names: string[],
  n: number,
  opts: ForkOptions,
): SandboxRecord[] {
  const { store, isRoleLabel } = deps;
  const { limits, ttl, env, extraLabels } = terms;
  const t = deps.now();
  const children: SandboxRecord[] = [];
  // One transaction for all n records (and one for their outcomes: recordOutcomes), not one per child.
  store.atomically(() => {
    for (let i = 0; i < n; i++) {
      const id = `sb-${randomBytes(5).toString('hex')}`;
      const rec: SandboxRecord = {
        ...source,
        id,
        name: names[i] ?? id,
        state: 'creating',
        parentId: source.id,
        depth: source.depth + 1,
        limits,
        env,
        labels: Object.fromEntries(
          Object.entries({
            ...Object.fromEntries(Object.entries(source.labels).filter(([k]) => !isRoleLabel(k))),
            ...extraLabels,
          }).filter(([k]) => !opts.dropLabels?.includes(k)),
        ),
        ...(opts.session === undefined ? {} : { session: opts.session }),
        // A child's TTL is its own: given, or what was left of the source's.
        expiresAt: ttl !== undefined ? t + ttl * 1000 : source.expiresAt,
        createdAt: t,
        updatedAt: t,
        hostPid: null,
        runtime: {},
        endReason: null,
      };
      store.insertSandbox(rec);
      children.push(rec);
    }
  });
  return children;
}

/** The runtime's fork of `source` into the children; when it throws, every child is recorded as failed. */
async function forkChildren(
  deps: ForkDeps,
  source: SandboxRecord,
  req: ForkRequest,
  children: SandboxRecord[],
): Promise<ForkOutcome> {
  const { store, runtime } = deps;
  try {
    return await runtime.forkSandbox(
      source,
      children.map((c, i) => ({
        id: c.id,
        name: c.name,
        env: c.env,
        limits: c.limits,
        forkIndex: i,
        // Inherited: a fork never widens (or narrows) its source's network policy.
        network: source.network,
        ...(req.labels?.[SNAPSHOT_LABEL] !== undefined ? { held: true } : {}),
      })),
      { wait: req.wait !== false },
    );
  } catch (e) {
    store.atomically(() => {
      for (const c of children)
        store.transitionSandbox(c.id, 'failed', { endReason: e instanceof Error ? e.message : String(e) });
    });
    throw e;
  }
}

/** Each child recorded as running or failed, as the runtime's fork left it. */
function recordOutcomes(
  { store, runtime }: Pick<ForkDeps, 'store' | 'runtime'>,
  source: SandboxRecord,
  outcome: ForkOutcome,
): ForkChildResult[] {
  return store.atomically(() =>
    outcome.children.map((o) => {
      if (o.ok) {
        const templateId =
          typeof o.handle.runtime.templateId === 'string' ? o.handle.runtime.templateId : source.templateId;
        const rec = store.transitionSandbox(o.id, 'running', {
          hostPid: o.handle.hostPid,
          runtime: o.handle.runtime,
          templateId,
          depth: typeof o.handle.runtime.depth === 'number' ? o.handle.runtime.depth : source.depth + 1,
        });
        return { ok: true, sandbox: info(rec, [], runtime) };
      }
      store.transitionSandbox(o.id, 'failed', { endReason: o.error });
      return { ok: false, error: { code: o.code ?? 'internal', message: o.error } };
    }),
  );
}

/** The fork's report: its timings, what the children carried from the source and what they did not. */
function forkResult(
  deps: ForkDeps,
  source: SandboxRecord,
  outcome: ForkOutcome,
  results: ForkChildResult[],
  started: number,
): ForkResult {
  const caps = capabilitiesOf(deps.runtime, runtimeOfSandbox(deps.runtime, source));
  // A runtime whose forks carry every process (gvisor: a checkpoint restored per child) leaves out only
  // what crosses the sandbox's edge.
  const notCarried = caps.forkProcesses
    ? ['connections to the host or beyond the sandbox (published-port and agent connections are made anew)']
    : [
        'processes other than the Python REPL (servers and background commands stay in the source only)',
        'threads of the REPL other than the one that forks',
        'sockets, pipes and memory maps held by the REPL',
      ];
  if (!outcome.pythonState)
    notCarried.unshift(
      `Python state: the source is ${source.depth + 1} forks deep, at the pid-namespace depth limit, so the children were forked from the template with the source's files only`,
    );
  return {
    source: source.id,
    pauseMs: Math.round(outcome.pauseMs * 100) / 100,
    snapshotMs: Math.round(outcome.snapshotMs * 100) / 100,
    driver: outcome.driver,
    durationMs: deps.now() - started,
    carried: {
      filesystem: true,
      pythonState: outcome.pythonState && caps.forkProcessState,
      processes: caps.forkProcesses === true,
      environment: true,
    },
    notCarried,
    children: results,
  };
}

export function createForker(deps: ForkDeps) {
  const { store, now } = deps;

  async function fork(
    ctx: CallerRef,
    source: SandboxRecord,
    req: ForkRequest,
    opts: ForkOptions = {},
  ): Promise<ForkResult> {
    const started = now();
    const n = checkForkCount(req.n);
    const names = checkChildNames(store, ctx, source, req, n);
    const terms = childTerms(source, req, deps.disk);
    const children = insertChildren(deps, source, terms, names, n, opts);
    const outcome = await forkChildren(deps, source, req, children);
    const results = recordOutcomes(deps, source, outcome);
    return forkResult(deps, source, outcome, results, started);
  }

  return fork;
}
