/** REPL and file operations of native sandboxes, carried over the agent connection (execs: exec-ops.ts). */
import type { SandboxRecord } from '../../../domain/types.ts';
import type {
  FileEntry,
  FileReadOptions,
  FileStat,
  FileWriteOptions,
  ReplEvalOptions,
  ReplResult,
  Runtime,
} from '../../../service/ports.ts';
import type { AgentConnection } from './agent-connection.ts';
import { readFileOver, writeFileOver } from './file-transfer.ts';
import { replEvalOver } from './repl-eval.ts';

interface Deps {
  connOf(rec: SandboxRecord): Promise<AgentConnection>;
  /** OOM kills counted for the sandbox so far (native: its memory cgroup's; it may throw). */
  countOomKills(rec: SandboxRecord): Promise<number>;
}

const num = (v: unknown, d = 0): number => (typeof v === 'number' ? v : d);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The Runtime port's calls into a sandbox's REPL and files (service/ports.ts), and its OOM count. */
export interface SandboxOps
  extends Pick<
    Runtime,
    | 'replEval'
    | 'replRestart'
    | 'readFile'
    | 'writeFile'
    | 'listFiles'
    | 'statFile'
    | 'deleteFile'
    | 'mkdir'
    | 'moveFile'
  > {
  /** OOM kills counted for the sandbox so far (0 when they cannot be read). */
  oomKills(rec: SandboxRecord): Promise<number>;
}

export function createSandboxOps(deps: Deps): SandboxOps {
  const oomKills = async (rec: SandboxRecord): Promise<number> => {
    try {
      return await deps.countOomKills(rec);
    } catch {
      return 0;
    }
  };

  async function replEval(rec: SandboxRecord, code: string, opts: ReplEvalOptions): Promise<ReplResult> {
    const c = await deps.connOf(rec);
    const before = await oomKills(rec);
    const r = await replEvalOver(c, code, opts);
    const after = r.restarted ? await oomKills(rec) : before;
    return { ...r, oomKilled: after > before };
  }

  const toStat = (r: Record<string, unknown>): FileStat => {
    const s: FileStat = {
      path: str(r.path),
      type: (['file', 'dir', 'symlink', 'other'].includes(str(r.type))
        ? r.type
        : 'other') as FileStat['type'],
      size: num(r.size),
      mode: num(r.mode),
      mtimeMs: num(r.mtime_ms),
    };
    if (typeof r.uid === 'number') s.uid = r.uid;
    if (typeof r.gid === 'number') s.gid = r.gid;
    if (typeof r.link_target === 'string') s.linkTarget = r.link_target;
    if (typeof r.etag === 'string') s.etag = r.etag;
    return s;
  };

  return {
    oomKills,
    replEval,
    async replRestart(rec: SandboxRecord) {
      await (await deps.connOf(rec)).request('repl.restart', {});
    },
    async readFile(rec: SandboxRecord, path: string, opts?: FileReadOptions) {
      return readFileOver(await deps.connOf(rec), path, opts);
    },
    async writeFile(rec: SandboxRecord, path: string, data: Buffer, opts?: FileWriteOptions) {
      return writeFileOver(await deps.connOf(rec), path, data, opts);
    },
    async listFiles(rec: SandboxRecord, path: string, opts?: { recursive?: boolean; limit?: number }) {
      const { result } = await (await deps.connOf(rec)).request('file.list', {
        path,
        recursive: opts?.recursive === true,
        limit: opts?.limit ?? 10000,
      });
      const entries = (Array.isArray(result.entries) ? result.entries : []) as Record<string, unknown>[];
      return {
        entries: entries.map((e): FileEntry => {
          const s = toStat(e);
          return {
            path: s.path,
            name: str(e.name),
            type: s.type,
            size: s.size,
            mode: s.mode,
            mtimeMs: s.mtimeMs,
          };
        }),
        truncated: result.truncated === true,
      };
    },
    async statFile(rec: SandboxRecord, path: string) {
      return toStat((await (await deps.connOf(rec)).request('file.stat', { path })).result);
    },
    async deleteFile(rec: SandboxRecord, path: string, opts?: { recursive?: boolean }) {
      await (await deps.connOf(rec)).request('file.delete', { path, recursive: opts?.recursive === true });
    },
    async mkdir(rec: SandboxRecord, path: string, opts?: { parents?: boolean }) {
      await (await deps.connOf(rec)).request('file.mkdir', { path, parents: opts?.parents !== false });
    },
    async moveFile(rec: SandboxRecord, from: string, to: string, opts?: { overwrite?: boolean }) {
      await (await deps.connOf(rec)).request('file.move', { from, to, overwrite: opts?.overwrite === true });
    },
  };
}
