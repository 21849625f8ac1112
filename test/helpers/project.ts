/** A user's project directory for tests and benchmarks (docs/STORAGE.md, "Project directories"). */
import { createHash } from 'node:crypto';
import { chownSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The project's owner on the host: a non-root uid, as a developer's checkout is. */
export const OWNER = 1000;
export const FILES = 2000;

/** Every entry's path, type, mode, owner and content hash: "byte-for-byte" as one comparable value. */
export function treeDigest(dir: string): string {
  const h = createHash('sha256');
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const r = rel === '' ? name : `${rel}/${name}`;
      const st = lstatSync(join(dir, r));
      h.update(`${r}\0${st.mode}\0${st.uid}\0${st.gid}\0${st.size}\0`);
      if (st.isFile()) h.update(readFileSync(join(dir, r)));
      if (st.isDirectory()) walk(r);
    }
  };
  walk('');
  return h.digest('hex');
}

/** A project of FILES small text files in 20 directories, a binary file and a README, owned by OWNER. */
export function makeProject(dir: string, files = FILES): void {
  mkdirSync(dir, { recursive: true });
  for (let d = 0; d < 20; d++) {
    mkdirSync(join(dir, `pkg${d}`));
    for (let f = 0; f < files / 20; f++)
      writeFileSync(join(dir, `pkg${d}`, `m${f}.py`), `# module ${d}.${f}\nVALUE = ${d * 1000 + f}\n`);
  }
  writeFileSync(join(dir, 'README.md'), 'line one\nline two\nline three\n');
  writeFileSync(join(dir, 'logo.bin'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 1, 2, 3, 0xff]));
  const own = (p: string) => {
    chownSync(p, OWNER, OWNER);
    if (lstatSync(p).isDirectory()) for (const n of readdirSync(p)) own(join(p, n));
  };
  own(dir);
}
