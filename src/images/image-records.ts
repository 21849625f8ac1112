/**
 * The image store's metadata: one `<stateDir>/images/<name>.json` per image, written atomically (temp file
 * and rename), read without the engine (doctor, set-up).
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { errors } from '../domain/errors.ts';
import type { Logger } from '../domain/logger.ts';
import type { ImageRecord } from '../domain/types.ts';

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export function validateImageName(name: string): void {
  if (!NAME_RE.test(name)) {
    throw errors.invalid(
      `invalid image name '${name}': use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit.`,
      { name },
    );
  }
}

export interface ImageRecords {
  list(): ImageRecord[];
  get(name: string): ImageRecord | undefined;
  require(name: string): ImageRecord;
  write(rec: ImageRecord): void;
  /** Forget an image's metadata (its layers are the caller's). */
  unlink(name: string): void;
  /** Layer paths some image still names. */
  layersInUse(): Set<string>;
}

export function createImageRecords(imagesDir: string, log: Pick<Logger, 'warn'>): ImageRecords {
  const metaPath = (name: string) => join(imagesDir, `${name}.json`);

  function list(): ImageRecord[] {
    const out: ImageRecord[] = [];
    for (const f of readdirSync(imagesDir).sort()) {
      if (f.startsWith('.') || !f.endsWith('.json')) continue;
      try {
        out.push(JSON.parse(readFileSync(join(imagesDir, f), 'utf8')) as ImageRecord);
      } catch (e) {
        log.warn({ file: f, err: (e as Error).message }, 'images: skipping unreadable metadata');
      }
    }
    return out;
  }

  function get(name: string): ImageRecord | undefined {
    if (!NAME_RE.test(name)) return undefined;
    try {
      return JSON.parse(readFileSync(metaPath(name), 'utf8')) as ImageRecord;
    } catch {
      return undefined;
    }
  }

  function requireImage(name: string): ImageRecord {
    const rec = get(name);
    if (!rec) throw errors.imageNotFound(name);
    return rec;
  }

  function writeRecord(rec: ImageRecord): void {
    // Synchronous temp + rename: atomic on disk, and no other store call can interleave between the
    // caller's "does this name exist?" check and this write.
    const tmp = join(imagesDir, `.${rec.name}.${randomBytes(4).toString('hex')}.tmp`);
    writeFileSync(tmp, `${JSON.stringify(rec, null, 2)}\n`, { mode: 0o644, flush: true });
    renameSync(tmp, metaPath(rec.name));
  }

  function layersInUse(): Set<string> {
    return new Set(list().flatMap((r) => r.layers));
  }

  return {
    list,
    get,
    require: requireImage,
    write: writeRecord,
    unlink: (name) => unlinkSync(metaPath(name)),
    layersInUse,
  };
}
