/** The image store: uid-shifted layers built with debootstrap or imported from a tarball or directory. */

export type { BuildDebianOptions, ImageStore } from '../service/ports.ts';
export { readAptMirror } from './apt-mirror.ts';
export { DEFAULT_PACKAGES, DEFAULT_SUITE } from './debootstrap.ts';
export type { UidShift } from './shift.ts';
export { shiftTree } from './shift.ts';
export type { ImageStoreOptions } from './store.ts';
export { createImageStore, DEFAULT_ENV, DEFAULT_UID_SHIFT } from './store.ts';
