/**
 * Prometheus metrics of the TCP listener (GET /metrics). A registry per app, never prom-client's global
 * one: two apps in one process (tests) must not share or double-register counters.
 *
 * No metric carries a tenant label: any tenant's token can read /metrics, and must not learn the other
 * tenants' names or activity from it.
 *
 * Engine-level counters are taken by wrapping the ForkboxApi the surfaces call (instrumentApi), so REST
 * and MCP are counted the same way without either knowing about metrics.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ForkboxApi } from '../../service/api.ts';
import type { HostMetrics } from '../../service/host-metrics.ts';
import type { PoolStats } from '../../service/warm-pool.ts';
import { reportErrors } from '../audit.ts';

export interface HttpMetrics {
  registry: Registry;
  sandboxCreates: Counter;
  execs: Counter<'kind'>;
  execDuration: Histogram<'kind'>;
  errors: Counter<'code'>;
  httpRequests: Counter<'method' | 'route' | 'status'>;
}

export interface MetricsOptions {
  /** Sandbox counts by state (all tenants together), read at scrape time. */
  sandboxCounts: () => Promise<Record<string, number>>;
  /** The daemon's own counters (runtime refusals, file descriptors), read at scrape time. */
  host?: HostMetrics | undefined;
  /** The warm pool per template (service/warm-pool.ts), read at scrape time. */
  pool?: () => PoolStats[];
}

/** The warm pool's gauges and counters by template (host-wide configuration, not a tenant's). */
function registerPoolMetrics(registry: Registry, read: () => PoolStats[]): void {
  type PoolValue = (s: PoolStats) => number;
  /** A metric by template, read afresh at each scrape: `put` gives it one template's value. */
  const byTemplate = <M extends Gauge<'template'> | Counter<'template'>>(
    name: string,
    help: string,
    pick: PoolValue,
    put: (m: M, labels: { template: string }, n: number) => void,
  ) => ({
    name,
    help,
    labelNames: ['template' as const],
    registers: [registry],
    collect(this: M) {
      this.reset();
      for (const s of read()) put(this, { template: s.template }, pick(s));
    },
  });
  const gauge = (name: string, help: string, pick: PoolValue) =>
    new Gauge(byTemplate<Gauge<'template'>>(name, help, pick, (m, labels, n) => m.set(labels, n)));
  const counter = (name: string, help: string, pick: PoolValue) =>
    new Counter(byTemplate<Counter<'template'>>(name, help, pick, (m, labels, n) => m.inc(labels, n)));
  gauge('forkbox_pool_sandboxes', 'Warm pool: sandboxes ready now, by template', (s) => s.size);
  gauge('forkbox_pool_target', 'Warm pool: sandboxes kept ready, by template', (s) => s.target);
  counter('forkbox_pool_hits_total', 'Creates served from the warm pool, by template', (s) => s.hits);
  counter(
    'forkbox_pool_misses_total',
    'Creates the warm pool could not serve (empty, or options it cannot give), by template',
    (s) => s.misses,
  );
}

/** The daemon-wide counters and gauges of `host`, registered on `registry`. */
function registerHostMetrics(registry: Registry, host: HostMetrics): void {
  new Counter({
    name: 'forkbox_control_connections_refused_total',
    help: "Connections to sandboxes' control sockets refused before being trusted (peer: not the sandbox's agent; limit: too many; hello: bad or refused hello)",
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [reason, n] of Object.entries(host.read().controlConnectionsRefused))
        this.inc({ reason }, n);
    },
  });
  new Counter({
    name: 'forkbox_admissions_refused_total',
    help: 'Creates and forks refused by admission, by reason',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [reason, n] of Object.entries(host.read().admissionsRefused)) this.inc({ reason }, n);
    },
  });
  new Counter({
    name: 'forkbox_egress_connections_total',
    help: "Connections through sandboxes' egress proxies, by decision (accepted, refused)",
    labelNames: ['decision'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [decision, n] of Object.entries(host.read().egress)) this.inc({ decision }, n);
    },
  });
  new Counter({
    name: 'forkbox_port_connections_total',
    help: "Connections to sandboxes' published ports, by decision (accepted, refused)",
    labelNames: ['decision'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [decision, n] of Object.entries(host.read().ports)) this.inc({ decision }, n);
    },
  });
  new Gauge({
    name: 'forkbox_daemon_open_fds',
    help: 'File descriptors the daemon has open',
    registers: [registry],
    collect() {
      const fds = host.read().fds;
      if (fds) this.set(fds.open);
    },
  });
  new Gauge({
    name: 'forkbox_daemon_fd_limit',
    help: "The daemon's open-files limit (RLIMIT_NOFILE)",
    registers: [registry],
    collect() {
      const fds = host.read().fds;
      if (fds && Number.isFinite(fds.limit)) this.set(fds.limit);
    },
  });
}

export function createMetrics(opts: MetricsOptions): HttpMetrics {
  const registry = new Registry();
  new Gauge({
    name: 'forkbox_sandboxes',
    help: 'Sandboxes by state',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [state, count] of Object.entries(await opts.sandboxCounts())) this.set({ state }, count);
    },
  });
  if (opts.host) registerHostMetrics(registry, opts.host);
  if (opts.pool) registerPoolMetrics(registry, opts.pool);
  return {
    registry,
    sandboxCreates: new Counter({
      name: 'forkbox_sandbox_creates_total',
      help: 'Sandboxes created (including fork children)',
      registers: [registry],
    }),
    execs: new Counter({
      name: 'forkbox_execs_total',
      help: 'Commands and code runs started',
      labelNames: ['kind'],
      registers: [registry],
    }),
    execDuration: new Histogram({
      name: 'forkbox_exec_duration_seconds',
      help: 'Duration of synchronous execs and code runs',
      labelNames: ['kind'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [registry],
    }),
    errors: new Counter({
      name: 'forkbox_errors_total',
      help: 'Engine errors by catalog code',
      labelNames: ['code'],
      registers: [registry],
    }),
    httpRequests: new Counter({
      name: 'forkbox_http_requests_total',
      help: 'HTTP requests by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
  };
}

/**
 * Wrap `api`: count creates, execs and errors into `m`, time sync execs, and report each failing
 * call's code to `onError` (the audit log's outcome). Every other method passes through unchanged.
 */
export function instrumentApi(api: ForkboxApi, m: HttpMetrics, onError?: (code: string) => void): ForkboxApi {
  const timed = async <T>(kind: string, run: () => Promise<T>): Promise<T> => {
    m.execs.inc({ kind });
    const end = m.execDuration.startTimer({ kind });
    try {
      return await run();
    } finally {
      end();
    }
  };
  const wrapped: ForkboxApi = {
    ...api,
    createSandbox: async (req, opts) => {
      const sb = await api.createSandbox(req, opts);
      m.sandboxCreates.inc();
      return sb;
    },
    forkSandbox: async (id, req) => {
      const r = await api.forkSandbox(id, req);
      const made = r.children.filter((c) => c.ok).length;
      if (made > 0) m.sandboxCreates.inc(made);
      return r;
    },
    exec: (id, req, opts) => timed('exec', () => api.exec(id, req, opts)),
    runCode: (id, req, opts) => timed('code', () => api.runCode(id, req, opts)),
    startExec: async (id, req) => {
      const r = await api.startExec(id, req);
      m.execs.inc({ kind: 'background' });
      return r;
    },
  };
  // Every method: errors counted and reported. (Methods are own properties of `wrapped` after the spread.)
  return reportErrors(wrapped, (code) => {
    m.errors.inc({ code });
    onError?.(code);
  });
}
