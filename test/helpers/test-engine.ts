/**
 * The real engine over a real SQLite store (a temp file) and the fake runtime: what unit tests of the
 * service layer, the transports, MCP and the CLI run against, without root. `api` and `scoped(ctx)`
 * are the engine's own API objects with every call recorded (tests of a transport check what reached
 * the service), and they may be patched per test (an object per tenant/session is kept).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForkboxError } from '../../src/domain/errors.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type CallerContext, createEngine, type Engine, type EngineDeps } from '../../src/service/engine.ts';
import type { Store } from '../../src/service/ports.ts';
import { openSqliteStore } from '../../src/storage/sqlite/index.ts';
import { createFakeImages, type FakeImages } from './fake-images.ts';
import { createFakeRuntime, type FakeRuntime, type FakeRuntimeOptions } from './fake-runtime/index.ts';

export interface ApiCall {
  method: string;
  args: unknown[];
}

export type RecordedApi = ForkboxApi & { calls: ApiCall[] };

/** A copy of `api` whose methods record their calls (in `calls` and in `shared`) before running. */
export function recordCalls(api: ForkboxApi, shared?: ApiCall[]): RecordedApi {
  const calls: ApiCall[] = [];
  const out: Record<string, unknown> = { calls };
  for (const [k, v] of Object.entries(api)) {
    if (typeof v !== 'function') continue;
    out[k] = (...args: unknown[]) => {
      const c = { method: k, args };
      calls.push(c);
      shared?.push(c);
      return (v as (...a: unknown[]) => unknown).apply(api, args);
    };
  }
  return out as unknown as RecordedApi;
}

export interface ManualClock {
  now(): number;
  advance(ms: number): void;
}

export function manualClock(start = Date.UTC(2030, 0, 1)): ManualClock {
  let t = start;
  return {
    now: () => t,
    advance(ms) {
      t += ms;
    },
  };
}

export interface TestEngineOptions {
  now?: () => number;
  sessionGraceMs?: number;
  sessionReattachMs?: number;
  forkProcessState?: boolean;
  /** The fake runtime offers reviveSandbox (fake-runtime/index.ts). */
  revive?: boolean;
  images?: string[];
  hostGc?: EngineDeps['hostGc'];
  diskUsage?: EngineDeps['diskUsage'];
  /** The warm pool's size per template (default 0: off). */
  poolSize?: number;
  /** The runtimes a create may name (default: native only; fake-runtime/index.ts). */
  runtimes?: FakeRuntimeOptions['runtimes'];
}

export interface TestEngine {
  engine: Engine;
  /** The default tenant's API (what the local socket serves), recorded. */
  api: RecordedApi;
  /** A caller's API, recorded; the same object for the same tenant and session. */
  scoped(ctx: CallerContext): RecordedApi;
  /** Every recorded call, through `api` and every `scoped` API. */
  calls: ApiCall[];
  runtime: FakeRuntime;
  store: Store;
  images: FakeImages;
  dbPath: string;
  /** A daemon restart: a new engine on the same database and runtime, recovered. */
  restart(opts?: Partial<TestEngineOptions>): Promise<TestEngine>;
  close(): Promise<void>;
}

const dirs = new Set<string>();
process.once('exit', () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function build(
  dbPath: string,
  runtime: FakeRuntime,
  images: FakeImages,
  opts: TestEngineOptions,
): TestEngine {
  const store = openSqliteStore({ path: dbPath });
  const log = { debug() {}, info() {}, warn() {}, error() {} };
  const engine = createEngine({
    store,
    runtime,
    images,
    stateDir: join(dbPath, '..'),
    version: '0.0.0-test',
    log,
    ...(opts.now ? { now: opts.now } : {}),
    ...(opts.sessionGraceMs === undefined ? {} : { sessionGraceMs: opts.sessionGraceMs }),
    ...(opts.sessionReattachMs === undefined ? {} : { sessionReattachMs: opts.sessionReattachMs }),
    ...(opts.hostGc ? { hostGc: opts.hostGc } : {}),
    ...(opts.diskUsage ? { diskUsage: opts.diskUsage } : {}),
    ...(opts.poolSize === undefined ? {} : { poolSize: opts.poolSize }),
  });
  const calls: ApiCall[] = [];
  const scopes = new Map<string, RecordedApi>();
  const scoped = (ctx: CallerContext) => {
    const key = `${ctx.tenant}\0${ctx.session ?? ''}\0${ctx.namespaces?.join(',') ?? '*'}`;
    let api = scopes.get(key);
    if (!api) {
      api = recordCalls(engine.scoped(ctx), calls);
      scopes.set(key, api);
    }
    return api;
  };
  let closed = false;
  const self: TestEngine = {
    engine,
    api: scoped({ tenant: 'default' }),
    scoped,
    calls,
    runtime,
    store,
    images,
    dbPath,
    async restart(more = {}) {
      await engine.close();
      store.close();
      closed = true;
      const next = build(dbPath, runtime, images, { ...opts, ...more });
      await next.engine.recover(1000);
      return next;
    },
    async close() {
      if (closed) return;
      closed = true;
      await engine.close();
      await runtime.shutdown({ killSandboxes: true });
      store.close();
    },
  };
  return self;
}

/** A fresh engine: empty database in a temp dir, fake runtime, fake image catalog with `debian`. */
export function createTestEngine(opts: TestEngineOptions = {}): TestEngine {
  const dir = mkdtempSync(join(tmpdir(), 'forkbox-engine-'));
  dirs.add(dir);
  const images = createFakeImages(opts.images);
  const runtime = createFakeRuntime({
    images,
    ...(opts.forkProcessState === undefined ? {} : { forkProcessState: opts.forkProcessState }),
    ...(opts.revive === undefined ? {} : { revive: opts.revive }),
    ...(opts.runtimes === undefined ? {} : { runtimes: opts.runtimes }),
  });
  return build(join(dir, 'forkbox.db'), runtime, images, opts);
}

/**
 * Programs for tests of how failures cross a transport: `fail` is refused as busy before it starts;
 * `die` prints a line, then the runtime reports the sandbox gone (as when its PID 1 dies mid-command).
 */
export function addFailurePrograms(runtime: FakeRuntime): void {
  runtime.programs.set('fail', () => {
    throw new ForkboxError('busy', 'sandbox is busy; retry later');
  });
  runtime.programs.set('die', (io) => {
    io.out('partial\n');
    throw new ForkboxError('sandbox_gone', 'the sandbox ended while the command ran');
  });
}
