/**
 * forkd's spawn: N children of a tag. A snapshot tag is restored (forked from its frozen state: files
 * and live Python state) in batches of at most LIMITS.forkChildren, since forkd allows 1000 per call;
 * a template tag (no snapshot by that name) creates each sandbox from the template. All or nothing: when
 * one child fails, the ones this call made are killed and the error says why.
 */
import { ForkboxError, isForkboxError } from '../../../../domain/errors.ts';
import { LIMITS } from '../../../../domain/limits.ts';
import type { ForkboxApi, ForkResult, SandboxInfo, SnapshotInfo } from '../../../../service/api.ts';
import { TAG_LABEL } from './shapes.ts';

/** Template sandboxes created at once. */
const CREATE_CONCURRENCY = 4;

export interface SpawnRequest {
  tag: string;
  n: number;
  memoryMb: number;
  progress(message: string): void;
  signal: AbortSignal;
}

async function snapshotNamed(api: ForkboxApi, tag: string): Promise<SnapshotInfo | undefined> {
  try {
    return await api.getSnapshot(tag);
  } catch (e) {
    if (isForkboxError(e) && e.code === 'not_found') return undefined;
    throw e;
  }
}

function childrenOf(r: ForkResult): SandboxInfo[] {
  const failed = r.children.find((c) => !c.ok || !c.sandbox);
  const made = r.children.flatMap((c) => (c.ok && c.sandbox ? [c.sandbox] : []));
  if (failed) {
    throw Object.assign(
      new ForkboxError(
        (failed.error?.code as ForkboxError['code'] | undefined) ?? 'internal',
        failed.error?.message ?? 'a child failed to start',
      ),
      { made },
    );
  }
  return made;
}

async function fromSnapshot(api: ForkboxApi, snap: SnapshotInfo, r: SpawnRequest, out: SandboxInfo[]) {
  const labels = { [TAG_LABEL]: r.tag };
  while (out.length < r.n) {
    if (r.signal.aborted) throw new ForkboxError('timeout', 'spawn_sandboxes was cancelled');
    const n = Math.min(LIMITS.forkChildren.max, r.n - out.length);
    const res = await api.restoreSnapshot(snap.id, { n, memoryMb: r.memoryMb, labels });
    try {
      out.push(...childrenOf(res));
    } catch (e) {
      out.push(...((e as { made?: SandboxInfo[] }).made ?? []));
      throw e;
    }
    r.progress(`${out.length} of ${r.n} sandboxes spawned`);
  }
}

async function fromTemplate(api: ForkboxApi, r: SpawnRequest, out: SandboxInfo[]) {
  const labels = { [TAG_LABEL]: r.tag };
  let next = 0;
  const worker = async () => {
    while (next < r.n) {
      if (r.signal.aborted) throw new ForkboxError('timeout', 'spawn_sandboxes was cancelled');
      next++;
      out.push(await api.createSandbox({ template: r.tag, memoryMb: r.memoryMb, labels }));
      r.progress(`${out.length} of ${r.n} sandboxes spawned`);
    }
  };
  const results = await Promise.allSettled(Array.from({ length: Math.min(CREATE_CONCURRENCY, r.n) }, worker));
  const failed = results.find((x): x is PromiseRejectedResult => x.status === 'rejected');
  if (failed) throw failed.reason;
}

export async function spawnFromTag(api: ForkboxApi, r: SpawnRequest): Promise<SandboxInfo[]> {
  const out: SandboxInfo[] = [];
  try {
    const snap = await snapshotNamed(api, r.tag);
    if (snap) {
      await fromSnapshot(api, snap, r, out);
    } else {
      if (!(await api.listTemplates()).some((t) => t.name === r.tag)) {
        throw new ForkboxError(
          'not_found',
          `no snapshot or template is tagged '${r.tag}'. See list_snapshots, or make one with create_snapshot or branch_sandbox.`,
          { tag: r.tag },
        );
      }
      await fromTemplate(api, r, out);
    }
    return out;
  } catch (e) {
    // All or nothing, as forkd: the sandboxes this call made are not left behind.
    await Promise.all(out.map((s) => api.killSandbox(s.id).catch(() => undefined)));
    throw e;
  }
}
