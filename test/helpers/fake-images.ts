/**
 * An in-memory image catalog for tests over the fake runtime: the default image `debian` exists,
 * builds and imports add records (with progress events like the real builders), an import of a path
 * containing 'bad' fails as an unreadable root filesystem would.
 */
import { errors, ForkboxError } from '../../src/domain/errors.ts';
import type { ImageRecord } from '../../src/domain/types.ts';
import type { ImageStore } from '../../src/service/ports.ts';

export function fakeImage(name: string, extra: Partial<ImageRecord> = {}): ImageRecord {
  return {
    name,
    id: `img-${name}`,
    layers: [`/fake/layers/${name}`],
    createdAt: 0,
    sizeBytes: 1000,
    source: `debootstrap:${name}`,
    env: { PATH: '/usr/local/bin:/usr/bin:/bin' },
    python: '/usr/bin/python3',
    ...extra,
  };
}

/** The image store of the fake runtime's tests, with its records to look at. */
export interface FakeImages extends ImageStore {
  /** The records by name. */
  images: Map<string, ImageRecord>;
}

export function createFakeImages(names: string[] = ['debian']): FakeImages {
  const images = new Map(names.map((n) => [n, fakeImage(n)]));
  const require = (name: string) => {
    const i = images.get(name);
    if (!i) throw errors.imageNotFound(name);
    return i;
  };
  return {
    images,
    list: () => [...images.values()],
    get: (name) => images.get(name),
    require,
    async buildDebian(o) {
      const name = o.name ?? `debian-${o.suite ?? 'bookworm'}`;
      // Like the real store: an image of that name built by debootstrap is another recipe's, replaced
      // only when the caller allows it.
      const existing = images.get(name);
      if (existing?.source.startsWith('debootstrap:')) o.mayReplace?.(existing);
      o.onProgress?.({ phase: 'download', message: 'fetching', current: 1, total: 2 });
      o.onProgress?.({ phase: 'download', message: 'fetching', current: 2, total: 2 });
      o.onProgress?.({ phase: 'shift', message: 'shifting uids' });
      const img = fakeImage(name, { source: `debootstrap:${o.suite ?? 'bookworm'}` });
      images.set(name, img);
      return img;
    },
    async importImage(name, source, o) {
      o?.onProgress?.({ phase: 'extract', message: source });
      if (source.includes('bad'))
        throw new ForkboxError('invalid_argument', `cannot import ${source}: not a root filesystem`);
      const img = fakeImage(name, { source: `import:${source}`, python: null, layers: [] });
      images.set(name, img);
      return img;
    },
    async pull(ref) {
      throw new ForkboxError('unavailable', `the fake image store cannot pull ${ref}`);
    },
    async ensure(name) {
      return require(name);
    },
    remove(name) {
      require(name);
      images.delete(name);
    },
  };
}
