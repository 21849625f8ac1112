/**
 * What `forkbox serve` records about itself in the state dir (`serve.json`, 0600), so that a CLI call
 * never replaces the operator's daemon: a daemon started with options (a token file, a listener,
 * `--project-root`, `--pool`, …), from the environment that sets them, or under systemd is *configured*,
 * and while its record says so the CLI does not start a plain daemon of its own for that state dir when
 * none answers (it may be restarting); it says what was configured and how to start it instead. A daemon
 * the CLI started on demand (or a plain `forkbox serve`) records `configured: false`.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const SERVE_RECORD_NAME = 'serve.json';
/** Set in the environment of a daemon the launcher starts on demand. */
export const ON_DEMAND_ENV = 'FORKBOX_ON_DEMAND';
/** The systemd unit `forkbox service install` writes (cli/commands/service.ts). */
export const SYSTEMD_UNIT = '/etc/systemd/system/forkbox.service';

/** Environment variables that configure `forkbox serve` as its flags do. */
const SERVE_ENV = ['FORKBOX_LISTEN', 'FORKBOX_TOKEN_FILE'] as const;

export interface ServeRecord {
  pid: number;
  startedAt: string;
  /** Started by an operator with options or a unit: no CLI call may start another in its place. */
  configured: boolean;
  /** How: the `serve` arguments, the configuring environment variables set, `systemd`. */
  how: string[];
}

/** The record of a `forkbox serve` started with `args` (what follows `serve`) in `env`. */
export function serveRecord(args: readonly string[], env: NodeJS.ProcessEnv, pid: number): ServeRecord {
  const how = [...args];
  for (const k of SERVE_ENV) if (env[k]) how.push(`${k}=${env[k]}`);
  if (env.INVOCATION_ID) how.push('systemd');
  const onDemand = env[ON_DEMAND_ENV] === '1';
  return { pid, startedAt: new Date().toISOString(), configured: !onDemand && how.length > 0, how };
}

export function writeServeRecord(stateDir: string, rec: ServeRecord): void {
  const path = join(stateDir, SERVE_RECORD_NAME);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(rec)}\n`, { mode: 0o600 });
  renameSync(tmp, path);
}

export function readServeRecord(stateDir: string): ServeRecord | undefined {
  try {
    const r = JSON.parse(readFileSync(join(stateDir, SERVE_RECORD_NAME), 'utf8')) as Partial<ServeRecord>;
    if (typeof r.configured !== 'boolean' || !Array.isArray(r.how)) return undefined;
    return {
      pid: Number(r.pid) || 0,
      startedAt: String(r.startedAt ?? ''),
      configured: r.configured,
      how: r.how.map(String).slice(0, 64),
    };
  } catch {
    return undefined;
  }
}

/** Why the CLI must not start a daemon for `stateDir` itself, or undefined when it may. */
export function configuredElsewhere(stateDir: string, unitPath = SYSTEMD_UNIT): string | undefined {
  const rec = readServeRecord(stateDir);
  if (rec?.configured) {
    const how = rec.how.join(' ').slice(0, 300);
    return `the daemon configured for this state dir (started ${rec.startedAt} as 'forkbox serve ${how}', pid ${rec.pid}) is not answering; it may be restarting. Start it the way it is started (its unit, or the same command), or, to let the CLI start a plain daemon again, remove ${join(stateDir, SERVE_RECORD_NAME)}.`;
  }
  if (existsSync(unitPath)) {
    let unit = '';
    try {
      unit = readFileSync(unitPath, 'utf8');
    } catch {
      // unreadable: treat as naming it
    }
    if (
      unit === '' ||
      unit.includes(`--state-dir ${stateDir} `) ||
      unit.includes(`--state-dir ${stateDir}\n`)
    )
      return `the systemd unit ${unitPath} runs the daemon for this state dir and it is not answering. Start it: 'systemctl start forkbox' (see 'systemctl status forkbox').`;
  }
  return undefined;
}
