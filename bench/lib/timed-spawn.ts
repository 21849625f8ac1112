/** A whole process as a benchmark probe: spawn, wait for exit 0, wall time in ms (stdout kept, bounded). */
import { spawn } from 'node:child_process';
import { nowMs } from './stats.ts';

/** Bound on what a probe's stdout and stderr may hold in memory. */
const MAX_OUTPUT = 64 * 1024;

export interface Timed {
  ms: number;
  stdout: string;
}

/**
 * Run `cmd args` until it exits; fails when it exits non-zero or outlives `timeoutMs` (stuck, not slow).
 * Asynchronous on purpose: servers in this process (a registry proxy) must keep answering meanwhile.
 */
export function timedSpawn(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<Timed> {
  return new Promise((res, rej) => {
    const t0 = nowMs();
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: opts.env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      if (stdout.length < MAX_OUTPUT) stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < MAX_OUTPUT) stderr += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 300_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      rej(e);
    });
    child.on('close', (code, signal) => {
      const ms = nowMs() - t0;
      clearTimeout(timer);
      if (code === 0) res({ ms, stdout });
      else rej(new Error(`${cmd} ${args.join(' ')} exited ${code ?? signal}: ${stderr.trim().slice(-2000)}`));
    });
  });
}
