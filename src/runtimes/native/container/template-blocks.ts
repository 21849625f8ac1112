/**
 * The blocks of host uids in a template's range (host/uid-ranges.ts): block 0 is the template's own, each
 * unrelated sandbox made from it takes one of the others, and a fork's children share their source's (a
 * fork tree is one trust domain: docs/SECURITY.md). A block is free again when the last live sandbox on
 * it is released. Each block has the idmaps its sandboxes' layers are mounted through (host/userns-maker.ts):
 * `storageNs` for layers stored with container ids (host 100000 + id), `hostNs` (made on first use) for a
 * project directory of the host.
 */
import { closeSync } from 'node:fs';
import type { UidRange } from '../host/uid-range.ts';
import { BLOCK_SIZE } from '../host/uid-ranges.ts';
import { hostIdmap, makeUserNamespaces } from '../host/userns-maker.ts';

export interface UidBlock {
  /** Index in its template's range (0: the template itself). */
  index: number;
  /** First host uid and gid of the block: container id 0 of the sandboxes on it. */
  base: number;
  /** nsfs descriptor: layers' stored ids (100000 + N) seen as this block's id N. */
  storageNs: number;
  /** nsfs descriptor: host uid N seen as this block's uid N (a project directory). */
  hostNs(): Promise<number>;
}

/** What the runtime records of a sandbox's block (its record's runtime data). */
export interface BlockRef {
  template: string;
  index: number;
  base: number;
}

export interface TemplateBlocks {
  readonly range: UidRange;
  /** A free block for a new, unrelated sandbox (one reference), or null when every one is taken. */
  take(): UidBlock | null;
  /** One more reference to block `index` (a fork child, or a sandbox found again after a restart). */
  acquire(index: number): UidBlock | undefined;
  /** Block `index`, without a reference of its own (one a caller took already). */
  get(index: number): UidBlock | undefined;
  /** One reference less; the block is free again at zero. */
  release(index: number): void;
  /** Blocks in use, the template's own not counted. */
  used(): number;
  /** Close every idmap descriptor (the template is gone). */
  close(): void;
}

/** `storageNs[i]` is block i's storage idmap (as many as the range has blocks). */
export function createTemplateBlocks(range: UidRange, storageNs: number[]): TemplateBlocks {
  const refs = new Array<number>(storageNs.length).fill(0);
  const hostNs = new Map<number, Promise<number>>();
  const blocks = storageNs.map(
    (fd, index): UidBlock => ({
      index,
      base: range.hostStart + index * BLOCK_SIZE,
      storageNs: fd,
      hostNs() {
        let p = hostNs.get(index);
        if (!p) {
          p = makeUserNamespaces([{ map: hostIdmap(range.hostStart + index * BLOCK_SIZE, BLOCK_SIZE) }]).then(
            ([nsFd]) => nsFd as number,
          );
          p.catch(() => hostNs.delete(index));
          hostNs.set(index, p);
        }
        return p;
      },
    }),
  );
  refs[0] = 1; // the template's own, for its life
  return {
    range,
    take() {
      // Lowest free first: fewer blocks touched, so fewer ids of the range ever appear on the host.
      const i = refs.findIndex((n, k) => k > 0 && n === 0);
      if (i < 0) return null;
      refs[i] = 1;
      return blocks[i] ?? null;
    },
    acquire(index) {
      const b = blocks[index];
      if (b && index > 0) refs[index] = (refs[index] ?? 0) + 1;
      return b;
    },
    get: (index) => blocks[index],
    release(index) {
      if (index > 0 && (refs[index] ?? 0) > 0) refs[index] = (refs[index] ?? 1) - 1;
    },
    used() {
      return refs.filter((n, k) => k > 0 && n > 0).length;
    },
    close() {
      for (const fd of storageNs) closeSync(fd);
      for (const p of hostNs.values()) void p.then((fd) => closeSync(fd)).catch(() => undefined);
      hostNs.clear();
    },
  };
}
