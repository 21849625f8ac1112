/**
 * Extended attributes of image trees (through util/fs-calls.ts: Node has no xattr API), and the pure byte
 * rewriting that uid shifting needs: file capabilities (v1/v2/v3 → v3 with a shifted rootid) and POSIX ACLs.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ForkboxError } from '../domain/errors.ts';
import { getXattr, listXattrs, setXattr } from '../util/fs-calls.ts';

export { setXattr } from '../util/fs-calls.ts';

export const CAP_XATTR = 'security.capability';
export const ACL_ACCESS = 'system.posix_acl_access';
export const ACL_DEFAULT = 'system.posix_acl_default';

// ───────────── reading and writing ─────────────

/**
 * Every entry under `dir` (and `dir` itself) carrying one of `names`: path → (name → value). Symlinks are
 * never followed, and a symlink's own attributes are read (a layer's symlinks point at host paths when
 * seen from outside the layer).
 */
export async function readXattrsTree(
  dir: string,
  names: readonly string[],
): Promise<Map<string, Map<string, Buffer>>> {
  const wanted = new Set(names);
  const out = new Map<string, Map<string, Buffer>>();
  const look = (path: string) => {
    const attrs = new Map<string, Buffer>();
    for (const name of listXattrs(path)) {
      if (!wanted.has(name)) continue;
      const value = getXattr(path, name);
      if (value !== null) attrs.set(name, value);
    }
    if (attrs.size > 0) out.set(path, attrs);
  };
  look(dir);
  const dirs = [dir];
  while (dirs.length > 0) {
    const d = dirs.pop() as string;
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      look(p);
      if (e.isDirectory()) dirs.push(p);
    }
  }
  return out;
}

/** Write many xattrs, each on the entry itself (on a symlink, never its target). */
export async function writeXattrs(entries: Map<string, Map<string, Buffer>>): Promise<void> {
  for (const [path, attrs] of entries) for (const [name, value] of attrs) setXattr(path, name, value);
}

// ───────────── file capabilities ─────────────

const VFS_CAP_REVISION_MASK = 0xff000000;
const VFS_CAP_FLAGS_EFFECTIVE = 0x000001;
const REV1 = 0x01000000;
const REV2 = 0x02000000;
const REV3 = 0x03000000;

/**
 * Rewrite a `security.capability` value for a layer shifted by `hostStart`: the result is always v3 with
 * rootid = hostStart + (old rootid, 0 for v1/v2). Without this, a v2 capability (which means "valid for
 * host root") would either be dropped by chown or, worse, grant capabilities relative to the host.
 */
export function shiftCapability(value: Buffer, hostStart: number, size: number, path: string): Buffer {
  if (value.length < 4) throw badXattr(path, CAP_XATTR, 'too short');
  const magic = value.readUInt32LE(0);
  const rev = (magic & VFS_CAP_REVISION_MASK) >>> 0;
  let permLo: number;
  let inhLo: number;
  let permHi = 0;
  let inhHi = 0;
  let rootid = 0;
  if (rev === REV1 && value.length === 12) {
    permLo = value.readUInt32LE(4);
    inhLo = value.readUInt32LE(8);
  } else if ((rev === REV2 && value.length === 20) || (rev === REV3 && value.length === 24)) {
    permLo = value.readUInt32LE(4);
    inhLo = value.readUInt32LE(8);
    permHi = value.readUInt32LE(12);
    inhHi = value.readUInt32LE(16);
    if (rev === REV3) rootid = value.readUInt32LE(20);
  } else {
    throw badXattr(path, CAP_XATTR, `unknown revision 0x${magic.toString(16)} / ${value.length} bytes`);
  }
  if (rootid >= size) throw idTooLarge(path, rootid, size, 'capability rootid');
  const out = Buffer.alloc(24);
  out.writeUInt32LE((REV3 | (magic & VFS_CAP_FLAGS_EFFECTIVE)) >>> 0, 0);
  out.writeUInt32LE(permLo, 4);
  out.writeUInt32LE(inhLo, 8);
  out.writeUInt32LE(permHi, 12);
  out.writeUInt32LE(inhHi, 16);
  out.writeUInt32LE(hostStart + rootid, 20);
  return out;
}

// ───────────── POSIX ACLs ─────────────

const ACL_VERSION = 2;
const ACL_USER = 0x02;
const ACL_GROUP = 0x08;

/** Shift the uid/gid of named user/group entries of a `system.posix_acl_*` value (header + 8-byte entries). */
export function shiftAcl(value: Buffer, hostStart: number, size: number, path: string, name: string): Buffer {
  if (value.length < 4 || (value.length - 4) % 8 !== 0 || value.readUInt32LE(0) !== ACL_VERSION) {
    throw badXattr(path, name, 'not a version 2 POSIX ACL');
  }
  const out = Buffer.from(value);
  for (let off = 4; off < out.length; off += 8) {
    const tag = out.readUInt16LE(off);
    if (tag !== ACL_USER && tag !== ACL_GROUP) continue;
    const id = out.readUInt32LE(off + 4);
    if (id >= size) throw idTooLarge(path, id, size, tag === ACL_USER ? 'ACL user id' : 'ACL group id');
    out.writeUInt32LE(hostStart + id, off + 4);
  }
  return out;
}

export function idTooLarge(path: string, id: number, size: number, what: string): ForkboxError {
  return new ForkboxError(
    'invalid_argument',
    `${path}: ${what} ${id} is outside the sandbox id range 0..${size - 1}; images may only use ids up to ${size - 1}. ` +
      'Fix the ownership in the image (e.g. chown it to a smaller id) and import it again.',
    { path, id, max: size - 1 },
  );
}

function badXattr(path: string, name: string, why: string): ForkboxError {
  return new ForkboxError(
    'invalid_argument',
    `${path}: malformed ${name} xattr (${why}); remove it from the image and import again.`,
    {
      path,
      xattr: name,
    },
  );
}
