/**
 * A gvisor fork: the source's agent lets go of its host connection (`hold`: gVisor cannot save one), the
 * source is checkpointed while it keeps running, and each child is a restore of that checkpoint on a root
 * and an inbox of its own — every process, its memory, its open files and its sockets inside the sandbox
 * are the source's as of that instant. Each child learns who it is from the identity.json the host left in
 * its inbox, read when the host wakes it (SIGUSR2; agent/holding.py). The source is woken the same way.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ForkboxError } from '../../domain/errors.ts';
import type { Logger } from '../../domain/logger.ts';
import type { ForkChildOutcome, ForkChildSpec } from '../../service/ports.ts';
import { deadline } from '../native/host/deadline.ts';
import type { GvisorLink, GvisorSandbox } from './gvisor-link.ts';
import type { GvisorMaker, PrepareInput } from './gvisor-make.ts';
import type { GvisorPaths } from './gvisor-paths.ts';
import type { Runsc } from './runsc.ts';

/** How long a held agent waits to be woken before it reconnects on its own (agent/holding.py). */
const HOLD_MS = 60_000;
/** How long a restored child may take to greet the host. */
const CHILD_HELLO_MS = 30_000;
/** Restores at once (each is a new sentry starting: CPU-bound on a small host). */
const RESTORES_AT_ONCE = 4;

export interface GvisorForkDeps {
  runsc: Runsc;
  paths: GvisorPaths;
  maker: GvisorMaker;
  link: GvisorLink;
  log: Logger;
}

export interface Checkpointed {
  /** The checkpoint image's directory. */
  image: string;
  /** How long the source was stopped (runsc pauses it while it writes the image). */
  pauseMs: number;
}

export interface GvisorFork {
  /** Writes a checkpoint of the running source; it runs on (and its agent reconnects) afterwards. */
  checkpoint(source: GvisorSandbox, sourceId: string): Promise<Checkpointed>;
  /** A new sandbox restored from `image`, with its own identity. */
  restore(
    image: string,
    child: ForkChildSpec,
    parentId: string,
    base: Omit<PrepareInput, 'id' | 'env' | 'limits'>,
  ): Promise<{ sb: GvisorSandbox; outcome: ForkChildOutcome }>;
  /** Restores every child (a few at a time); each succeeds or fails on its own. */
  restoreAll(
    image: string,
    children: ForkChildSpec[],
    parentId: string,
    base: Omit<PrepareInput, 'id' | 'env' | 'limits'>,
  ): Promise<{ sandboxes: GvisorSandbox[]; outcomes: ForkChildOutcome[] }>;
}

/**
 * `dir` as a directory only root can enter: made 0700 if missing; one that exists must already be a real
 * directory of root's, never a link (/dev/shm is writable by every host user, who could otherwise plant
 * a directory of their own there and read the checkpoints: a sandbox's whole memory).
 */
export function privateDir(dir: string): void {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as { code?: string }).code !== 'EEXIST') throw e;
  }
  const st = lstatSync(dir);
  if (!st.isDirectory() || st.uid !== 0)
    throw new ForkboxError(
      'permission_denied',
      `${dir} is not a directory of root's (owner uid ${st.uid}${st.isSymbolicLink() ? ', a symlink' : ''}); something else made it. Remove it, then fork again.`,
    );
  chmodSync(dir, 0o700);
}

export function createGvisorFork(deps: GvisorForkDeps): GvisorFork {
  const { runsc, paths, maker, link } = deps;

  async function checkpoint(source: GvisorSandbox, sourceId: string): Promise<Checkpointed> {
    const conn = await link.waitConnected(source, 10_000, `sandbox ${sourceId}'s agent`);
    privateDir(paths.checkpoints);
    const image = join(paths.checkpoint(source.id), randomBytes(6).toString('hex'));
    mkdirSync(image, { recursive: true, mode: 0o700 });
    source.holding = true;
    try {
      const closed = new Promise<void>((resolve) => conn.on('close', () => resolve()));
      await conn.request('hold', { max_ms: HOLD_MS }, { timeoutMs: 10_000 });
      await deadline<void>(10_000, `sandbox ${sourceId}'s agent letting go of its connection`, (resolve) => {
        void closed.then(resolve);
      });
      const t0 = performance.now();
      await runsc.checkpoint(source.id, image);
      const pauseMs = performance.now() - t0;
      return { image, pauseMs };
    } catch (e) {
      rmSync(image, { recursive: true, force: true });
      throw e;
    } finally {
      source.holding = false;
      await runsc.kill(source.id, 'USR2').catch((e: unknown) => {
        deps.log.warn(
          { sandbox: source.id, err: String(e) },
          'could not wake the source after its checkpoint',
        );
      });
    }
  }

  async function restore(
    image: string,
    child: ForkChildSpec,
    parentId: string,
    base: Omit<PrepareInput, 'id' | 'env' | 'limits'>,
  ): Promise<{ sb: GvisorSandbox; outcome: ForkChildOutcome }> {
    const sb = await maker.prepare({ ...base, id: child.id, env: child.env, limits: child.limits });
    try {
      const identity = {
        sandbox_id: child.id,
        nonce: sb.nonce,
        parent_id: parentId,
        fork_index: child.forkIndex,
        env: child.env,
      };
      writeFileSync(join(paths.inbox(child.id), 'identity.json'), JSON.stringify(identity), { mode: 0o600 });
      await runsc.restore(child.id, paths.bundle(child.id), image, paths.log(child.id));
      // Woken at once; its host pid is read while it says hello.
      await runsc.kill(child.id, 'USR2');
      const [st] = await Promise.all([
        runsc.state(child.id),
        link.waitConnected(sb, CHILD_HELLO_MS, `restored sandbox ${child.id}'s agent`),
      ]);
      sb.hostPid = st?.pid ?? 0;
      return {
        sb,
        outcome: { id: child.id, ok: true, handle: { id: child.id, hostPid: sb.hostPid, runtime: {} } },
      };
    } catch (e) {
      await maker.release(sb);
      throw e;
    }
  }

  async function restoreAll(
    image: string,
    children: ForkChildSpec[],
    parentId: string,
    base: Omit<PrepareInput, 'id' | 'env' | 'limits'>,
  ): Promise<{ sandboxes: GvisorSandbox[]; outcomes: ForkChildOutcome[] }> {
    const outcomes: ForkChildOutcome[] = new Array(children.length);
    const sandboxes: GvisorSandbox[] = [];
    let next = 0;
    const worker = async () => {
      for (;;) {
        const i = next++;
        const child = children[i];
        if (child === undefined) return;
        try {
          const r = await restore(image, child, parentId, base);
          sandboxes.push(r.sb);
          outcomes[i] = r.outcome;
        } catch (e) {
          const err = e instanceof ForkboxError ? e : new ForkboxError('internal', String(e));
          outcomes[i] = { id: child.id, ok: false, error: err.message, code: err.code };
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(RESTORES_AT_ONCE, children.length) }, worker));
    return { sandboxes, outcomes };
  }

  return { checkpoint, restore, restoreAll };
}
