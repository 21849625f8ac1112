/**
 * What agentkernel's tools share: its argument shapes (a sandbox is addressed by its name), its
 * duration strings (`1h`, `30m`, `2d`), its port mappings (`8080:80`, `3000`), command output as one
 * text, and its snapshot metadata. docs/TOOLSETS.md ("agentkernel") says what maps to what.
 */
import { z } from 'zod';
import { ForkboxError } from '../../../../domain/errors.ts';
import { SIZES } from '../../../../domain/limits.ts';
import type { ExecOutcome, ForkboxApi, SandboxInfo, SnapshotInfo } from '../../../../service/api.ts';
import { refSchema } from '../../../bounds.ts';

export const nameArg = refSchema().describe('Name of the sandbox');

export const commandArg = z
  .array(z.string().max(SIZES.argChars))
  .min(1)
  .max(SIZES.argvEntries)
  .describe('The command and arguments to run (argv, no shell)');

/** Port mappings as agentkernel wrote them: `HOST:CONTAINER` or `CONTAINER` (TCP). */
export const portsArg = z
  .array(z.string().max(32))
  .max(64)
  .describe('Port mappings (e.g. ["8080:80", "3000"]): the sandbox port published on 127.0.0.2');

const PORT_RE = /^(?:(\d{1,5}):)?(\d{1,5})(?:\/(tcp|udp))?$/;

/** Publish each mapping on the host's loopback (`HOST:` chooses the host port, else a free one). */
export async function publishPorts(api: ForkboxApi, sandbox: string, specs: readonly string[]) {
  const parsed = specs.map((spec) => {
    const m = PORT_RE.exec(spec);
    if (!m || m[3] === 'udp') {
      throw new ForkboxError(
        'invalid_argument',
        `port mapping '${spec}': write HOST:CONTAINER or CONTAINER (TCP only; forkbox publishes TCP ports on 127.0.0.2).`,
      );
    }
    return { port: Number(m[2]), ...(m[1] ? { hostPort: Number(m[1]) } : {}) };
  });
  for (const p of parsed) {
    await api.exposePort(sandbox, p.port, p.hostPort === undefined ? {} : { hostPort: p.hostPort });
  }
}

const UNIT_S: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86400 };

/** agentkernel's durations: a number with s, m, h or d (a bare number is seconds). */
export function durationSeconds(text: string): number {
  const m = /^(\d{1,9})([smhd]?)$/.exec(text.trim());
  if (!m || Number(m[1]) === 0) {
    throw new ForkboxError(
      'invalid_argument',
      `invalid duration '${text.slice(0, 40)}': write a number with s, m, h or d (e.g. 30m, 1h, 2d).`,
    );
  }
  return Number(m[1]) * (UNIT_S[m[2] || 's'] ?? 1);
}

/**
 * A command's output as agentkernel answered it: stdout then stderr. A non-zero exit, a timeout or a
 * kill is a failure (an isError result carrying the output), so an agent cannot mistake it for success.
 */
export function commandOutput(r: ExecOutcome): string {
  const out = r.stdout + r.stderr;
  if (r.exitCode === 0) return out;
  const why = r.timedOut
    ? 'command timed out'
    : r.exitCode === null
      ? `command was killed by signal ${r.signal ?? '?'}`
      : `command exited with code ${r.exitCode}`;
  throw new ForkboxError('conflict', out.length > 0 ? `${why}:\n${out}` : why, {
    exit_code: r.exitCode,
  });
}

/** agentkernel's snapshot metadata, from forkbox's snapshot and the sandbox it was taken from. */
export function akSnapshot(s: SnapshotInfo, source: SandboxInfo | undefined) {
  return {
    name: s.name,
    sandbox: source?.name ?? s.source,
    image_tag: `snapshot:${s.id}`,
    backend: 'forkbox',
    base_image: s.image,
    vcpus: source ? source.limits.cpus : null,
    memory_mb: source ? Math.round(source.limits.memoryBytes / (1024 * 1024)) : null,
    created_at: s.createdAt,
  };
}

/** The sandbox a snapshot was taken from, if forkbox still knows it (ended ones included). */
export async function snapshotSource(api: ForkboxApi, s: SnapshotInfo): Promise<SandboxInfo | undefined> {
  return api.getSandbox(s.source).catch(() => undefined);
}
