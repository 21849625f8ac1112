/**
 * Every bound on what a caller may ask for, defined once. The engine checks requests against these
 * (service/validate.ts), and the MCP tool schemas and the REST/OpenAPI schemas are derived from them
 * (protocol/bounds.ts), so a value one surface accepts is never refused by another for being out of
 * range. The agent inside each sandbox is handed the bounds it enforces (AGENT_BOUNDS, below) and keeps
 * none of its own. test/unit/limits-agree.test.ts holds the three surfaces to each bound's edges, and asks
 * the agent.
 */

import { MiB } from './sizes.ts';

/** A numeric range, both ends inclusive. `field` is the wire name used in messages. */
export interface Bound {
  readonly field: string;
  readonly min: number;
  readonly max: number;
  /** Only whole numbers. */
  readonly integer: boolean;
}

const bound = (field: string, min: number, max: number, integer = true): Bound => ({
  field,
  min,
  max,
  integer,
});

/** Per-sandbox resource limits, TTLs and per-call bounds. */
export const LIMITS = {
  /** Hard memory limit of a sandbox, MiB. */
  memoryMb: bound('memory_mb', 16, 1024 * 1024),
  /** CPU quota, in CPUs. */
  cpus: bound('cpus', 0.01, 1024, false),
  /** Processes and threads in a sandbox. */
  pids: bound('pids', 8, 65_536),
  /** Time to live, seconds (30 days at most). */
  ttlSeconds: bound('ttl_seconds', 1, 30 * 24 * 3600),
  /**
   * A command's or a code run's timeout, seconds. The smallest supported value is 0.1 s: below it the
   * agent's timer could not honour it, so it is refused rather than read as "no timeout".
   */
  timeoutSeconds: bound('timeout_seconds', 0.1, 24 * 3600, false),
  /**
   * Output returned inline per stream of a command (its head and tail), bytes; 0 returns none (all of
   * it is in the spool file).
   */
  maxOutputBytes: bound('max_output_bytes', 0, 64 * MiB),
  /**
   * The same over MCP, and a poll's page there (`max_bytes`): a tool result stays a few MiB, far under
   * MCP clients' message limits (protocol/mcp/kit/tool-result.ts); the rest is in the spool file.
   */
  mcpOutputBytes: bound('max_output_bytes', 0, MiB),
  /** Bytes of each stream of a command kept in its spool file inside the sandbox. */
  spoolBytes: bound('spool_bytes', 0, 4 * 1024 * MiB),
  /** Children of one fork or restore call. */
  forkChildren: bound('n', 1, 100),
  /** How long one poll may wait for output, ms. */
  pollWaitMs: bound('wait_ms', 0, 60_000),
  /** The same over MCP: well under the usual 60 s client request timeout, so a poll never loses the race. */
  mcpPollWaitMs: bound('wait_ms', 0, 25_000),
  /** A poll returns chunks after this sequence number (-1: from the start). */
  afterSeq: bound('after_seq', -1, Number.MAX_SAFE_INTEGER),
  /** A terminal's size (an exec with a tty), in character cells. */
  ttyRows: bound('rows', 1, 1000),
  ttyCols: bound('cols', 1, 1000),
  /** A port inside a sandbox to publish. */
  port: bound('port', 1, 65_535),
  /** The host port asked for (none: the daemon picks a free one); never a privileged one. */
  hostPort: bound('host_port', 1024, 65_535),
  /** Sandboxes a warm pool keeps ready per template (`forkbox serve --pool`, a template's `pool`); 0 = off. */
  pool: bound('pool', 0, 64),
} as const satisfies Record<string, Bound>;

/**
 * Bounds of the compatibility toolsets that are their systems' own (docs/TOOLSETS.md): kept as those
 * systems had them, so a call that worked there works here. A bound wider than the engine's is met by
 * the adapter in several engine calls (forkd's 1000 children are restores of at most
 * LIMITS.forkChildren each).
 */
export const COMPAT_LIMITS = {
  /** forkd's spawn_sandboxes `n`. */
  forkdSpawn: bound('n', 1, 1000),
  /** Podflare's fork `n`. */
  podflareFork: bound('n', 1, 32),
  /** agentkernel's sandbox_run `timeout_ms` (forkbox's exec timeout, in milliseconds). */
  agentkernelTimeoutMs: bound('timeout_ms', 100, 24 * 3600 * 1000),
} as const satisfies Record<string, Bound>;

/** agentkernel's text results: longer ones keep their head and tail, as agentkernel's server cut them. */
export const AGENTKERNEL_RESULT_BYTES = 16_000;

/** Sizes and counts of strings, lists and maps in requests. */
export const SIZES = {
  /** One file written, or one part of a file read, in one call, bytes (REST and the API). */
  fileBytes: 64 * MiB,
  /**
   * The same over MCP: one file_read page or one file_write chunk (decoded bytes), so no message
   * exceeds a few MiB; bigger files move in several calls (offset/append).
   */
  mcpFileBytes: 2 * MiB,
  /**
   * Data bytes `forkbox cp` copies out of a sandbox in one run by default (holes of sparse files are
   * neither counted nor copied); `--max-size` sets it, up to copyOutMaxBytes.
   */
  copyOutBytes: 4 * 1024 * MiB,
  copyOutMaxBytes: 1024 * 1024 * MiB,
  /** Sandbox, snapshot, template and namespace names, characters. */
  nameChars: 63,
  /** Any path inside a sandbox, characters. */
  pathChars: 4096,
  /** Sandbox or snapshot references (id, name or namespace/name), characters. */
  refChars: 128,
  /** Namespaces one bearer token may be limited to (token file). */
  tokenNamespaces: 64,
  /** Environment variables per request, and each one's name and value. */
  envVars: 256,
  envNameChars: 256,
  envValueChars: 32 * 1024,
  /** Labels per sandbox, and each one's key and value. */
  labels: 64,
  labelKeyChars: 63,
  labelValueChars: 256,
  /** A command: argv entries, each entry, and a shell command line. */
  argvEntries: 4096,
  argChars: 128 * 1024,
  cmdChars: 256 * 1024,
  /** Python (or bash, node) source of one code run. */
  codeChars: MiB - 1024,
  idempotencyKeyChars: 256,
  /** A network policy (`allow:…`): characters, and entries (names, wildcards, CIDRs). */
  networkChars: 8192,
  networkEntries: 64,
  /** Files and directories of a project directory put in a sandbox (each is recorded at create). */
  projectEntries: 200_000,
  /** A patch of a sandbox's project changes, bytes. */
  patchBytes: 64 * MiB,
} as const;

/** The daemon's egress proxy, per sandbox with an `allow` network policy (network/egress-proxy.ts). */
export const EGRESS = {
  /** The port the sandbox's agent relays from (its own loopback) to the proxy. */
  relayPort: 3128,
  /** Connections open at once through one sandbox's proxy (more are refused). */
  connections: 64,
  /** Bytes of a request head (CONNECT or plain HTTP line and headers) the proxy reads. */
  headBytes: 16 * 1024,
  /** The handshake (an HTTP request head, or a SOCKS5 greeting and request) must arrive within, ms. */
  handshakeMs: 10_000,
  /** A connection with no traffic either way for this long is closed, ms. */
  idleMs: 5 * 60_000,
  /** Connecting to the destination (after the name is resolved), ms. */
  connectMs: 10_000,
  /** Resolving a name, ms. */
  resolveMs: 5_000,
} as const;

/** Pulling images from registries (images/registry/). */
export const REGISTRY = {
  /** A manifest or an index, bytes (the distribution spec's own recommendation is 4 MiB). */
  manifestBytes: 4 * MiB,
  /** An image config blob, bytes. */
  configBytes: 8 * MiB,
  /** Layers of one image (overlay's option list must fit in one page: host/mounts.ts). */
  layers: 64,
  /** One layer blob as downloaded, bytes. */
  layerBytes: 16 * 1024 * MiB,
  /** A registry reference (`host:port/name:tag` or `…@sha256:…`), characters. */
  refChars: 255,
  /** Token responses and error bodies, bytes. */
  smallBodyBytes: 64 * 1024,
  /** Connecting and waiting for response headers, ms. */
  headersMs: 30_000,
  /** A response with no bytes arriving for this long is abandoned, ms. */
  idleMs: 60_000,
  /** Redirects followed for one request (blob storage often redirects). */
  redirects: 5,
} as const;

/** Published ports (network/published-ports.ts): a sandbox's loopback servers on host 127.0.0.2 ports. */
export const PORTS = {
  /**
   * The host address published ports listen on: a loopback address that is not the listener's
   * (127.0.0.1), so a page a sandbox serves is never of the console's site — browsers scope cookies by
   * host, not port — and never receives the console's session cookie.
   */
  publishHost: '127.0.0.2',
  /** Ports one sandbox may publish (create's `ports` list and port_expose together). */
  perSandbox: 16,
  /** Connections open at once through one published port (more are closed at accept). */
  connectionsPerPort: 32,
  /** Connections open at once through all of one sandbox's ports (host port and HTTP listener). */
  connectionsPerSandbox: 64,
  /** The agent's connection back on ports.sock must arrive within this, ms. */
  connectMs: 5_000,
  /** A connection with no traffic either way for this long is closed, ms. */
  idleMs: 5 * 60_000,
} as const;

/** The browser in a sandbox (src/browser/, docs/BROWSER.md). */
export const BROWSER = {
  /** Browsers open at once in one daemon (each is a Chromium in its sandbox, ~150 MB or more). */
  perDaemon: 16,
  /** Browsers open at once for one tenant (so one tenant cannot take the daemon's all). */
  perTenant: 8,
  /** Chromium must have written its DevTools port within this, ms (a cold start took ~1 s here). */
  startMs: 30_000,
  /** Default and largest wait of a navigation or an action, ms. */
  actionMs: 15_000,
  maxActionMs: 60_000,
  /** An accessibility snapshot is cut past this many bytes (a marker says how much was left out). */
  snapshotBytes: 64 * 1024,
  /** A screenshot (PNG) larger than this is refused: take the viewport, not the full page. */
  screenshotBytes: 4 * 1024 * 1024,
  /** A full-page screenshot is clipped to this height, px. */
  fullPageMaxHeight: 8_000,
  /** Events kept per browser (oldest dropped first; cursors keep counting). */
  events: 1_000,
  /** Longest text kept of one event (console text, URL, error), bytes. */
  eventTextBytes: 2_048,
  /** Longest URL an agent may open, and longest text it may fill in, bytes. */
  urlBytes: 8_192,
  fillBytes: 64 * 1024,
  /** Viewport of a new page, px. */
  width: 1280,
  height: 800,
  /** Actions after a page's open that a fork's children replay (more are not recorded). */
  replayActions: 200,
  /** A child's whole replay, ms (what is left undone is reported). */
  replayMs: 120_000,
  /**
   * Bytes one browser may send the daemon in a window (a 4 MiB screenshot is ~5.4 MiB of CDP): past them
   * its connection is cut and the browser is gone, so a page (or a process posing as Chromium) cannot
   * fill the daemon's memory.
   */
  relayWindowBytes: 32 * 1024 * 1024,
  relayWindowMs: 10_000,
  /** Connections at once from the daemon to one browser's DevTools port (Playwright makes one). */
  connections: 4,
} as const;

/** The warm pool's refill (service/warm-pool.ts): bounded in rate, backing off after failures. */
export const POOL = {
  /** Least time between the starts of two refill creates of one template, ms. */
  refillGapMs: 20,
  /** After a failed refill (admission refused, image gone…), the first wait before trying again, ms. */
  backoffMs: 1_000,
  /** The longest such wait, ms. */
  maxBackoffMs: 30_000,
  /** A tenant's pool of a template (not the host's own) is drained after this long without a create, ms. */
  tenantIdleMs: 10 * 60_000,
} as const;

/** OIDC bearer tokens on the TCP listener (protocol/http/oidc.ts, oidc-discovery.ts). */
export const OIDC = {
  /** A bearer token verified as a JWT, bytes: a longer one is refused before it is parsed. */
  tokenBytes: 8 * 1024,
  /** The discovery document, and the JWKS, bytes. */
  documentBytes: 256 * 1024,
  /** Fetching the discovery document or the JWKS, headers and body, ms. */
  fetchMs: 5_000,
  /** Clock skew allowed on `exp` and `nbf` when none is configured, seconds. */
  clockSkewSeconds: 30,
  /** The most clock skew that may be configured, seconds. */
  maxClockSkewSeconds: 300,
  /**
   * After a JWKS fetch, a token with an unknown key id triggers no other fetch for this long, ms (the
   * default; a flood of made-up key ids then costs the issuer one request per period), and a failed
   * discovery is retried at most this often.
   */
  jwksCooldownMs: 30_000,
  /** Cached keys are fetched again after this, ms (a removed key stops working within it). */
  jwksMaxAgeMs: 10 * 60_000,
} as const;

/** The 2024-11-05 HTTP+SSE MCP transport (protocol/mcp/http/http-sse.ts); its sessions share the Streamable HTTP session limits. */
export const MCP_SSE = {
  /** Requests of one session waiting for their answers at once (more are refused with 429). */
  pendingRequests: 16,
  /** A comment line on every open stream this often, so proxies do not close a quiet one, ms. */
  keepAliveMs: 15_000,
} as const;

/** Sandbox, snapshot, template and namespace names: a letter or digit, then letters, digits, '.', '_' or '-'. */
export const NAME_RE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/;
/** Environment variable names. */
export const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** How a bound reads in a message: "a whole number from 16 to 1048576". */
export function describeBound(b: Bound): string {
  return `${b.integer ? 'a whole number' : 'a number'} from ${b.min} to ${b.max}`;
}

/** Whether `v` is within the bound. */
export function withinBound(b: Bound, v: number): boolean {
  return Number.isFinite(v) && (!b.integer || Number.isInteger(v)) && v >= b.min && v <= b.max;
}

/**
 * The bounds the agent enforces inside a sandbox (src/agent/bounds.py), handed to it by the daemon in the
 * template's environment as `FORKBOX_BOUNDS` (agentBoundsEnv): the agent keeps no number of its own for
 * anything the host bounds too, so a value the host accepts is never cut shorter inside the sandbox.
 * Forks inherit them with the agent's memory. test/integration/agent-bounds.test.ts asks the agent.
 */
export const AGENT_BOUNDS = {
  /** One frame's JSON header and body on the agent's links (agent-link/agent-frame.ts), bytes. */
  frameHeaderBytes: MiB,
  frameBodyBytes: 16 * MiB,
  /** Output kept inline per stream of an exec or a code run when the request names none, and at most. */
  defaultOutputBytes: MiB,
  outputBytes: LIMITS.maxOutputBytes.max,
  /** The tail part of that budget at most (the rest is the head; agent-link/output.ts tailBudget). */
  tailBytes: 64 * 1024,
  /** Bytes of each stream kept in a spool file, at most. */
  spoolBytes: LIMITS.spoolBytes.max,
  /** A terminal's rows and columns, at most. */
  ttySide: Math.max(LIMITS.ttyRows.max, LIMITS.ttyCols.max),
  /** Connections the agent relays at once for one proxy or one published port. */
  relayConnections: EGRESS.connections,
} as const;

/** AGENT_BOUNDS as the agent reads them (`FORKBOX_BOUNDS`): JSON with snake_case keys. */
export function agentBoundsEnv(): string {
  const b = AGENT_BOUNDS;
  return JSON.stringify({
    frame_header_bytes: b.frameHeaderBytes,
    frame_body_bytes: b.frameBodyBytes,
    default_output_bytes: b.defaultOutputBytes,
    output_bytes: b.outputBytes,
    tail_bytes: b.tailBytes,
    spool_bytes: b.spoolBytes,
    tty_side: b.ttySide,
    relay_connections: b.relayConnections,
  });
}
