/**
 * Extended attributes through Debian's getfattr/setfattr (Node has no xattr API), and the pure byte
 * rewriting that uid shifting needs: file capabilities (v1/v2/v3 → v3 with a shifted rootid) and POSIX ACLs.
 */
import { ForkboxError } from '../domain/errors.ts';
import { runOk } from '../util/subprocess.ts';

export const CAP_XATTR = 'security.capability';
export const ACL_ACCESS = 'system.posix_acl_access';
export const ACL_DEFAULT = 'system.posix_acl_default';

// ───────────── getfattr dump format ─────────────

/** Undo getfattr's quoting of path names: `\ooo` octal escapes and `\\`. */
export function unquote(s: string): string {
  if (!s.includes('\\')) return s;
  const bytes: number[] = [];
  const raw = Buffer.from(s, 'utf8');
  for (let i = 0; i < raw.length; i++) {
    const b = raw[i] as number;
    if (
      b === 0x5c &&
      i + 3 < raw.length &&
      /^[0-7]{3}$/.test(raw.subarray(i + 1, i + 4).toString('latin1'))
    ) {
      bytes.push(Number.parseInt(raw.subarray(i + 1, i + 4).toString('latin1'), 8));
      i += 3;
    } else if (b === 0x5c && raw[i + 1] === 0x5c) {
      bytes.push(0x5c);
      i += 1;
    } else bytes.push(b);
  }
  return Buffer.from(bytes).toString('utf8');
}

/** Quote a path for setfattr --restore: octal-escape anything that is not plain printable ASCII. */
export function quote(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    if (b === 0x5c || b <= 0x20 || b >= 0x7f) out += `\\${b.toString(8).padStart(3, '0')}`;
    else out += String.fromCharCode(b);
  }
  return out;
}

/** Parse `getfattr -d -e hex --absolute-names` output into path → (name → value bytes). */
export function parseGetfattrDump(text: string): Map<string, Map<string, Buffer>> {
  const out = new Map<string, Map<string, Buffer>>();
  let current: Map<string, Buffer> | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('# file: ')) {
      current = new Map();
      out.set(unquote(line.slice('# file: '.length)), current);
      continue;
    }
    const eq = line.indexOf('=');
    if (!current || eq < 0) continue;
    const name = line.slice(0, eq);
    const value = line.slice(eq + 1);
    if (value.startsWith('0x')) current.set(name, Buffer.from(value.slice(2), 'hex'));
    else if (value.startsWith('"') && value.endsWith('"'))
      current.set(name, Buffer.from(unquote(value.slice(1, -1))));
    else current.set(name, Buffer.from(value, 'base64'));
  }
  return out;
}

/** Render path → (name → value) as a `setfattr --restore` file. */
export function renderRestore(entries: Iterable<[string, Map<string, Buffer>]>): string {
  let out = '';
  for (const [path, attrs] of entries) {
    out += `# file: ${quote(path)}\n`;
    for (const [name, value] of attrs) out += `${name}=0x${value.toString('hex')}\n`;
    out += '\n';
  }
  return out;
}

/** Every file under `dir` (symlinks not followed) carrying one of `names`; one getfattr call. */
export async function readXattrsTree(
  dir: string,
  names: readonly string[],
): Promise<Map<string, Map<string, Buffer>>> {
  const pattern = `^(${names.map((n) => n.replace(/\./g, '\\.')).join('|')})$`;
  // -h: never follow symlinks (a layer's symlinks point at host paths when seen from outside the layer).
  const r = await runOk('getfattr', ['-R', '-h', '-d', '-m', pattern, '-e', 'hex', '--absolute-names', dir]);
  return parseGetfattrDump(r.stdout.toString('utf8'));
}

/** Write many xattrs in one setfattr call (-h: on the symlink itself, never its target). */
export async function writeXattrs(entries: Map<string, Map<string, Buffer>>): Promise<void> {
  if (entries.size === 0) return;
  await runOk('setfattr', ['-h', '--restore=-'], { input: renderRestore(entries) });
}

export async function setXattr(path: string, name: string, value: Buffer): Promise<void> {
  await runOk('setfattr', ['-h', '-n', name, '-v', `0x${value.toString('hex')}`, path]);
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
