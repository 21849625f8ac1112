/**
 * A sandbox's filesystem in memory, with the semantics and error codes of the agent's `file.*`
 * operations (src/agent/fileops.py as surfaced by the native runtime): paths are normalised from `/`,
 * writes replace a file whole, directories need `recursive` to be deleted, a move does not overwrite
 * unless asked. Copied whole on a fork (`clone`): children see the files of one instant.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { ForkboxError } from '../../../src/domain/errors.ts';
import type {
  FileEntry,
  FileRead,
  FileReadOptions,
  FileStat,
  FileWriteOptions,
  FileWritten,
} from '../../../src/service/ports.ts';

/** A file's version: bumped by every write, so the ETag changes even when the content does not. */
type FileNode = { kind: 'file'; data: Buffer; mode: number; mtimeMs: number; version?: number };

let versions = 0;
const etagOf = (n: FileNode): string =>
  `fb-${createHash('sha256')
    .update(`${n.version ?? 0}:`)
    .update(n.data)
    .digest('hex')
    .slice(0, 32)}`;
type DirNode = { kind: 'dir'; mode: number; mtimeMs: number };
export type FsNode = FileNode | DirNode;

/** The agent's error codes, surfaced as the native runtime maps them (agent-connection.ts). */
const CODES = {
  not_found: 'not_found',
  is_a_directory: 'invalid_argument',
  not_a_directory: 'invalid_argument',
  exists: 'already_exists',
  bad_request: 'invalid_argument',
  conflict: 'conflict',
} as const;

function fail(agentCode: keyof typeof CODES, message: string): ForkboxError {
  return new ForkboxError(CODES[agentCode], message, { agentCode });
}

export function normalise(path: string): string {
  if (typeof path !== 'string' || path.length === 0 || path.includes('\0'))
    throw fail('bad_request', 'path must be a non-empty string without NUL bytes');
  return posix.normalize(posix.join('/', path));
}

const parentOf = (p: string) => posix.dirname(p);
const under = (p: string, dir: string) => (dir === '/' ? p !== '/' : p.startsWith(`${dir}/`));

export class FakeFs {
  readonly nodes: Map<string, FsNode>;

  constructor(nodes?: Map<string, FsNode>) {
    this.nodes = nodes ?? FakeFs.base();
  }

  /** What a fresh sandbox of the fake image holds. */
  static base(): Map<string, FsNode> {
    const t = Date.now();
    const dir = (): DirNode => ({ kind: 'dir', mode: 0o755, mtimeMs: t });
    const m = new Map<string, FsNode>();
    for (const d of ['/', '/bin', '/etc', '/root', '/tmp', '/usr', '/var']) m.set(d, dir());
    m.set('/etc/hostname', { kind: 'file', data: Buffer.from('sandbox\n'), mode: 0o644, mtimeMs: t });
    return m;
  }

  clone(): FakeFs {
    const copy = new Map<string, FsNode>();
    for (const [k, v] of this.nodes)
      copy.set(k, v.kind === 'file' ? { ...v, data: Buffer.from(v.data) } : { ...v });
    return new FakeFs(copy);
  }

  get(path: string): FsNode | undefined {
    return this.nodes.get(normalise(path));
  }

  read(path: string, opts: FileReadOptions = {}): FileRead {
    const p = normalise(path);
    const n = this.nodes.get(p);
    if (!n) throw fail('not_found', `${p}: No such file or directory`);
    if (n.kind === 'dir') throw fail('is_a_directory', `${p} is a directory; use file.list`);
    const start = opts.offset ?? 0;
    const end = Math.min(n.data.length, opts.length === undefined ? n.data.length : start + opts.length);
    const data = Buffer.from(n.data.subarray(start, end));
    const r: FileRead = { data, size: n.data.length, etag: etagOf(n) };
    if (opts.sparse === true) {
      r.extents = data.length > 0 ? [[start, data.length]] : [];
      r.end = Math.max(end, start);
    }
    return r;
  }

  /** The `if_match` check of the agent's file.write, done with the write as one step. */
  private checkIfMatch(p: string, ifMatch: string | undefined): void {
    if (ifMatch === undefined) return;
    const cur = this.nodes.get(p);
    const now = cur?.kind === 'file' ? etagOf(cur) : null;
    if (now === ifMatch) return;
    throw fail(
      'conflict',
      now === null
        ? `${p} does not exist (if_match ${ifMatch} was given): list the directory, then decide again`
        : `${p} changed since you read it (if_match ${ifMatch}, current etag ${now}): read it again and apply your change to the current content`,
    );
  }

  private ensureParent(p: string, createDirs: boolean): void {
    const parent = parentOf(p);
    const n = this.nodes.get(parent);
    if (!n) {
      if (!createDirs)
        throw fail('not_found', `directory ${parent} does not exist; pass create_dirs to create it`);
      this.mkdir(parent, { parents: true });
      return;
    }
    if (n.kind !== 'dir') throw fail('not_a_directory', `${parent} is not a directory`);
  }

  write(path: string, data: Buffer, opts: FileWriteOptions = {}): FileWritten {
    const p = normalise(path);
    this.ensureParent(p, opts.createDirs === true);
    const cur = this.nodes.get(p);
    if (cur?.kind === 'dir') throw fail('is_a_directory', `${p} is a directory`);
    this.checkIfMatch(p, opts.ifMatch);
    const old = cur?.kind === 'file' ? cur.data : Buffer.alloc(0);
    const inPlace = opts.append === true || opts.offset !== undefined;
    let body = Buffer.from(data);
    if (opts.append === true) body = Buffer.concat([old, data]);
    else if (opts.offset !== undefined) {
      if (opts.offset > old.length)
        throw fail('bad_request', `offset ${opts.offset} is past the end of ${p} (${old.length} bytes)`);
      const tail = old.subarray(Math.min(old.length, opts.offset + data.length));
      body = Buffer.concat([old.subarray(0, opts.offset), data, tail]);
    }
    const node: FileNode = {
      kind: 'file',
      data: body,
      // In place (append, offset), an existing file keeps its mode, as with the agent.
      mode: (inPlace && cur?.kind === 'file' ? cur.mode : (opts.mode ?? 0o644)) & 0o7777,
      mtimeMs: Date.now(),
      version: ++versions,
    };
    this.nodes.set(p, node);
    return { size: body.length, etag: etagOf(node) };
  }

  private entry(p: string, n: FsNode): FileEntry {
    return {
      path: p,
      name: posix.basename(p) || '/',
      type: n.kind,
      size: n.kind === 'file' ? n.data.length : 4096,
      mode: n.mode,
      mtimeMs: n.mtimeMs,
    };
  }

  list(path: string, opts: { recursive?: boolean; limit?: number } = {}) {
    const root = normalise(path);
    const n = this.nodes.get(root);
    if (!n) throw fail('not_found', `${root}: No such file or directory`);
    if (n.kind !== 'dir') throw fail('not_a_directory', `${root} is not a directory; use file.stat`);
    const limit = opts.limit ?? 10_000;
    const all = [...this.nodes.keys()]
      .filter((k) => under(k, root) && (opts.recursive === true || parentOf(k) === root))
      .sort();
    const entries = all.slice(0, limit).map((k) => this.entry(k, this.nodes.get(k) as FsNode));
    return { entries, truncated: all.length > limit };
  }

  stat(path: string): FileStat {
    const p = normalise(path);
    const n = this.nodes.get(p);
    if (!n) throw fail('not_found', `${p}: No such file or directory`);
    const { name: _name, ...rest } = this.entry(p, n);
    return { ...rest, uid: 0, gid: 0, ...(n.kind === 'file' ? { etag: etagOf(n) } : {}) };
  }

  delete(path: string, opts: { recursive?: boolean } = {}): void {
    const p = normalise(path);
    if (p === '/') throw fail('bad_request', 'refusing to delete /');
    const n = this.nodes.get(p);
    if (!n) throw fail('not_found', `${p}: No such file or directory`);
    if (n.kind === 'dir') {
      if (opts.recursive !== true)
        throw fail('is_a_directory', `${p} is a directory; pass recursive to delete it`);
      for (const k of [...this.nodes.keys()]) if (under(k, p)) this.nodes.delete(k);
    }
    this.nodes.delete(p);
  }

  mkdir(path: string, opts: { parents?: boolean } = {}): void {
    const p = normalise(path);
    const cur = this.nodes.get(p);
    if (cur) {
      if (opts.parents !== false && cur.kind === 'dir') return;
      throw fail('exists', `${p} already exists`);
    }
    const parent = this.nodes.get(parentOf(p));
    if (!parent) {
      if (opts.parents === false) throw fail('not_found', `${parentOf(p)}: No such file or directory`);
      this.mkdir(parentOf(p), { parents: true });
    } else if (parent.kind !== 'dir') throw fail('not_a_directory', `${parentOf(p)} is not a directory`);
    this.nodes.set(p, { kind: 'dir', mode: 0o755, mtimeMs: Date.now() });
  }

  move(from: string, to: string, opts: { overwrite?: boolean } = {}): void {
    const src = normalise(from);
    const dst = normalise(to);
    const n = this.nodes.get(src);
    if (!n) throw fail('not_found', `${src}: No such file or directory`);
    const existing = this.nodes.get(dst);
    if (existing) {
      if (opts.overwrite !== true)
        throw fail('exists', `${dst} already exists; pass overwrite to replace it`);
      if (existing.kind === 'dir' && n.kind !== 'dir')
        throw fail('is_a_directory', `${dst} is a directory; a file cannot replace it`);
      this.delete(dst, { recursive: true });
    }
    this.ensureParent(dst, false);
    const moved = [...this.nodes.entries()].filter(([k]) => k === src || under(k, src));
    for (const [k] of moved) this.nodes.delete(k);
    for (const [k, v] of moved) this.nodes.set(dst + k.slice(src.length), v);
  }

  /** Bytes in regular files (the fake's disk usage). */
  bytes(): number {
    let n = 0;
    for (const v of this.nodes.values()) if (v.kind === 'file') n += v.data.length;
    return n;
  }
}
