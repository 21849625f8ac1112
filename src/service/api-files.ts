/** The file part of the API for one caller. */
import { ForkboxError } from '../domain/errors.ts';
import { SIZES } from '../domain/limits.ts';
import type { ForkboxApi } from './api.ts';
import type { CallerContext } from './caller.ts';
import type { EngineParts } from './engine-parts.ts';
import { checkPath } from './validate.ts';

type FileApi = Pick<
  ForkboxApi,
  'readFile' | 'writeFile' | 'listFiles' | 'statFile' | 'deleteFile' | 'mkdir' | 'moveFile'
>;

export function fileApi(p: EngineParts, ctx: CallerContext): FileApi {
  const { runtime } = p;
  const running = (idOrName: string) => p.running(ctx, idOrName);
  return {
    readFile: async (idOrName, path, opts) => {
      if (opts?.length !== undefined && opts.length > SIZES.fileBytes) {
        throw new ForkboxError(
          'too_large',
          `length ${opts.length} is over the ${SIZES.fileBytes}-byte limit of one read; read in parts with offset and length.`,
          { limit: SIZES.fileBytes },
        );
      }
      return runtime.readFile(running(idOrName), checkPath(path), opts);
    },
    async writeFile(idOrName, path, data, opts) {
      if (data.length > SIZES.fileBytes) {
        throw new ForkboxError(
          'too_large',
          `file is ${data.length} bytes, over the ${SIZES.fileBytes}-byte limit of one write. Split it, or copy a tar archive and unpack it inside.`,
          { limit: SIZES.fileBytes },
        );
      }
      if (opts?.append === true && opts.offset !== undefined) {
        throw new ForkboxError('invalid_argument', 'give append or offset, not both.');
      }
      return runtime.writeFile(running(idOrName), checkPath(path), data, opts);
    },
    listFiles: async (idOrName, path, opts) => runtime.listFiles(running(idOrName), checkPath(path), opts),
    statFile: async (idOrName, path) => runtime.statFile(running(idOrName), checkPath(path)),
    deleteFile: async (idOrName, path, opts) => runtime.deleteFile(running(idOrName), checkPath(path), opts),
    mkdir: async (idOrName, path) => runtime.mkdir(running(idOrName), checkPath(path), { parents: true }),
    moveFile: async (idOrName, from, to, opts) =>
      runtime.moveFile(running(idOrName), checkPath(from), checkPath(to), opts),
  };
}
