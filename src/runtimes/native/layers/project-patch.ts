/**
 * A sandbox's project changes as a patch `git apply` takes (docs/STORAGE.md, "Project directories"):
 * text files as unified diffs, binary files as git binary patches (a zlib-deflated literal in git's
 * base85), symlinks as git writes them (mode 120000, the target as content), mode changes as mode lines.
 * Exact renames (project-renames.ts) as git's rename headers, first: their content is the same.
 * Paths are relative to the project directory (`a/`, `b/` prefixes: `git apply` with its default -p1).
 */
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { ForkboxError } from '../../../domain/errors.ts';
import { SIZES } from '../../../domain/limits.ts';
import { unifiedDiff } from '../../../service/diff/diff.ts';
import type { LayerChain, LayerDiff, RenamedEntry } from '../../../service/ports.ts';
import { type ChainEntry, chainView } from './layer-diff.ts';

/** Each side of a file in a patch is read up to this many bytes. */
const MAX_FILE_BYTES = 64 * 1024 * 1024;

const B85 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~';

/** git's base85 lines: a length letter, then 4-byte groups as 5 characters, 52 bytes a line. */
function base85Lines(data: Buffer): string {
  let out = '';
  for (let off = 0; off < data.length; off += 52) {
    const chunk = data.subarray(off, off + 52);
    const n = chunk.length;
    out += n <= 26 ? String.fromCharCode(64 + n) : String.fromCharCode(96 + n - 26);
    for (let i = 0; i < n; i += 4) {
      let acc = 0;
      for (let j = 0; j < 4; j++) acc = acc * 256 + (i + j < n ? (chunk[i + j] as number) : 0);
      let s = '';
      for (let j = 0; j < 5; j++) {
        s = (B85[acc % 85] as string) + s;
        acc = Math.floor(acc / 85);
      }
      out += s;
    }
    out += '\n';
  }
  return out;
}

const C_ESCAPES: Record<number, string> = {
  7: 'a',
  8: 'b',
  9: 't',
  10: 'n',
  11: 'v',
  12: 'f',
  13: 'r',
  34: '"',
  92: '\\',
};

/**
 * A path as git writes it in a patch (its default core.quotePath): as is when every byte is printable
 * ASCII other than `"` and `\\`; else in double quotes, with C escapes (\\n, \\t, \\", \\\\, …) and every
 * other control or non-ASCII byte as a three-digit octal escape. `git apply` reads both forms.
 */
export function gitQuote(path: string): string {
  const bytes = Buffer.from(path, 'utf8');
  if (bytes.every((b) => b >= 0x20 && b < 0x7f && b !== 34 && b !== 92)) return path;
  let out = '"';
  for (const b of bytes) {
    const esc = C_ESCAPES[b];
    if (esc !== undefined) out += `\\${esc}`;
    else if (b < 0x20 || b >= 0x7f) out += `\\${b.toString(8).padStart(3, '0')}`;
    else out += String.fromCharCode(b);
  }
  return `${out}"`;
}

/** `a/<path>` or `b/<path>`, quoted as a whole when the path needs it (as git does). */
const side = (prefix: 'a' | 'b', rel: string) => gitQuote(`${prefix}/${rel}`);

/** git's object id of a blob. */
function blobId(data: Buffer): string {
  return createHash('sha1').update(`blob ${data.length}\0`).update(data).digest('hex');
}

const ZERO_ID = '0'.repeat(40);

/** A regular file or symlink's git mode, or null for what git does not track (dirs, devices…). */
function gitMode(e: ChainEntry): string | null {
  if (e.kind === 'symlink') return '120000';
  if (e.kind === 'file') return e.mode & 0o111 ? '100755' : '100644';
  return null;
}

function contentOf(e: ChainEntry): Buffer {
  if (e.kind === 'symlink') return Buffer.from(e.linkTarget ?? '');
  return e.data ?? Buffer.alloc(0);
}

/** One path's patch from its host side `a` to its sandbox side `b` (either may be absent). */
function filePatch(rel: string, a: ChainEntry, b: ChainEntry): string {
  const ma = gitMode(a);
  const mb = gitMode(b);
  if (
    (ma === null && mb === null) ||
    (a.kind === 'file' && a.data === null) ||
    (b.kind === 'file' && b.data === null)
  )
    return '';
  // A change of kind (file ↔ symlink) is a deletion and an addition.
  if (ma !== null && mb !== null && (a.kind === 'symlink') !== (b.kind === 'symlink'))
    return filePatch(rel, a, { kind: 'absent', mode: 0 }) + filePatch(rel, { kind: 'absent', mode: 0 }, b);
  const da = ma === null ? null : contentOf(a);
  const db = mb === null ? null : contentOf(b);
  let head = `diff --git ${side('a', rel)} ${side('b', rel)}\n`;
  if (ma === null) head += `new file mode ${mb}\n`;
  else if (mb === null) head += `deleted file mode ${ma}\n`;
  else if (ma !== mb) head += `old mode ${ma}\nnew mode ${mb}\n`;
  const sameContent = da !== null && db !== null && da.equals(db);
  if (sameContent) return ma !== mb ? head : '';
  const binary = (da?.includes(0) ?? false) || (db?.includes(0) ?? false);
  const ida = da === null ? ZERO_ID : blobId(da);
  const idb = db === null ? ZERO_ID : blobId(db);
  head += `index ${ida}..${idb}${ma !== null && mb !== null && ma === mb ? ` ${ma}` : ''}\n`;
  if (binary) {
    const z = deflateSync(db ?? Buffer.alloc(0));
    const back = deflateSync(da ?? Buffer.alloc(0));
    return `${head}GIT binary patch\nliteral ${db?.length ?? 0}\n${base85Lines(z)}\nliteral ${da?.length ?? 0}\n${base85Lines(back)}\n`;
  }
  const body = unifiedDiff(da?.toString('utf8') ?? '', db?.toString('utf8') ?? '', {
    old: da === null ? '/dev/null' : side('a', rel),
    new: db === null ? '/dev/null' : side('b', rel),
  });
  return head + body;
}

/** A regular file moved with its bytes unchanged, as git writes an exact rename. */
function renamePatch(r: RenamedEntry): string {
  const [from, to] = [r.from.slice(1), r.to.slice(1)];
  const ma = r.a.mode & 0o111 ? '100755' : '100644';
  const mb = r.b.mode & 0o111 ? '100755' : '100644';
  const modes = ma === mb ? '' : `old mode ${ma}\nnew mode ${mb}\n`;
  return `diff --git ${side('a', from)} ${side('b', to)}\n${modes}similarity index 100%\nrename from ${gitQuote(from)}\nrename to ${gitQuote(to)}\n`;
}

/**
 * The patch from the host directory (`host`) to the sandbox's view of it (`sandbox`, its project chain)
 * for the paths a project diff found. Directories are implied by their files, as in git.
 */
export async function projectPatch(host: string, sandbox: LayerChain, diff: LayerDiff): Promise<string> {
  const hv = await chainView({ upper: host, lowers: [] });
  const sv = await chainView(sandbox);
  const paths = [...diff.added, ...diff.removed, ...diff.modified].map((e) => e.path.slice(1)).sort();
  let out = (diff.renamed ?? []).map(renamePatch).join('');
  for (const rel of paths) {
    const [a, b] = await Promise.all([hv.read(rel, MAX_FILE_BYTES), sv.read(rel, MAX_FILE_BYTES)]);
    out += filePatch(rel, a, b);
    if (out.length > SIZES.patchBytes)
      throw new ForkboxError(
        'resource_exhausted',
        `the patch is over ${SIZES.patchBytes} bytes; use 'forkbox apply' or narrow it with --path.`,
      );
  }
  return out;
}
