import { z } from 'zod';
import { defineTool, HINTS, pathArg, sandboxArg } from '../kit/tool-kit.ts';

export const fileStat = defineTool({
  name: 'file_stat',
  title: 'Stat path',
  description: "A path's type, size, mode, owner, mtime, symlink target and (files) etag for if_match.",
  annotations: HINTS.read,
  input: z.object({ sandbox: sandboxArg, path: pathArg }),
  output: z.object({
    path: z.string(),
    type: z.string(),
    size: z.number(),
    mode: z.string(),
    mtime: z.string(),
    uid: z.number().nullable(),
    gid: z.number().nullable(),
    link_target: z.string().nullable(),
    etag: z.string().nullable(),
  }),
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    const st = await api.statFile(id, a.path);
    return {
      structured: {
        path: st.path,
        type: st.type,
        size: st.size,
        mode: st.mode.toString(8).padStart(3, '0'),
        mtime: new Date(st.mtimeMs).toISOString(),
        uid: st.uid ?? null,
        gid: st.gid ?? null,
        link_target: st.linkTarget ?? null,
        etag: st.etag ?? null,
      },
    };
  },
});
