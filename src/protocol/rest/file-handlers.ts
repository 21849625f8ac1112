/** The /v1 handlers of files in a sandbox: read (ranges, sparse extents), write (ETag preconditions), list, stat, delete, mkdir, move. */
import { type ApiFor, type Handlers, idParam, jsonBody, rawBody, stripUndefined } from './handler-support.ts';
import {
  deleteQuery,
  FILE_SIZE_HEADER,
  listQuery,
  mkdirBody,
  moveBody,
  parseOrThrow,
  readQuery,
  statQuery,
  writeQuery,
} from './local-schemas.ts';
import { FILE_END_HEADER, FILE_EXTENTS_HEADER, formatExtents, quoteEtag, unquoteEtag } from './wire.ts';

export function fileHandlers(A: ApiFor) {
  return {
    readFile: async (c) => {
      const q = parseOrThrow(readQuery, c.req.query(), 'query');
      const r = await A(c).readFile(
        idParam(c),
        q.path,
        stripUndefined({ offset: q.offset, length: q.length, sparse: q.sparse }),
      );
      const { data } = r;
      // A Buffer may view a pooled or shared ArrayBuffer; hand Hono exactly the file's bytes.
      const bytes = new Uint8Array(data.buffer as ArrayBuffer, data.byteOffset, data.byteLength);
      const headers: Record<string, string> = {
        'Content-Type': 'application/octet-stream',
        [FILE_SIZE_HEADER]: String(r.size),
        ETag: quoteEtag(r.etag),
      };
      if (r.extents !== undefined) headers[FILE_EXTENTS_HEADER] = formatExtents(r.extents);
      if (r.end !== undefined) headers[FILE_END_HEADER] = String(r.end);
      return c.body(bytes, 200, headers);
    },
    writeFile: async (c) => {
      const q = parseOrThrow(writeQuery, c.req.query(), 'query');
      const data = await rawBody(c);
      const ifMatch = c.req.header('if-match');
      const opts = stripUndefined({
        mode: q.mode,
        createDirs: q.create_dirs,
        append: q.append,
        offset: q.offset,
        ifMatch: ifMatch === undefined ? undefined : unquoteEtag(ifMatch),
      });
      const r = await A(c).writeFile(idParam(c), q.path, data, opts);
      c.header('ETag', quoteEtag(r.etag));
      return c.json(r);
    },
    listFiles: async (c) => {
      const q = parseOrThrow(listQuery, c.req.query(), 'query');
      return c.json(await A(c).listFiles(idParam(c), q.path, stripUndefined({ recursive: q.recursive })));
    },
    statFile: async (c) => {
      const q = parseOrThrow(statQuery, c.req.query(), 'query');
      const st = await A(c).statFile(idParam(c), q.path);
      if (st.etag !== undefined) c.header('ETag', quoteEtag(st.etag));
      return c.json(st);
    },
    deleteFile: async (c) => {
      const q = parseOrThrow(deleteQuery, c.req.query(), 'query');
      await A(c).deleteFile(idParam(c), q.path, stripUndefined({ recursive: q.recursive }));
      return c.json({ ok: true });
    },
    mkdir: async (c) => {
      const body = parseOrThrow(mkdirBody, await jsonBody(c), 'mkdir request');
      await A(c).mkdir(idParam(c), body.path);
      return c.json({ ok: true });
    },
    moveFile: async (c) => {
      const body = parseOrThrow(moveBody, await jsonBody(c), 'move request');
      await A(c).moveFile(idParam(c), body.from, body.to, stripUndefined({ overwrite: body.overwrite }));
      return c.json({ ok: true });
    },
  } satisfies Handlers;
}
