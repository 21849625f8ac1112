/**
 * The local API's wire constants shared by the server (local-app.ts, api-routes.ts) and its client
 * (transports/daemon-client.ts). Dependency-free on purpose: the CLI imports this without loading the
 * server's routes, zod schemas or Hono.
 */

/** Content type of streaming responses: one JSON object per line. */
export const NDJSON = 'application/x-ndjson';
/** Response header carrying a file's full size on GET .../files/content. */
export const FILE_SIZE_HEADER = 'x-forkbox-file-size';
/** Response headers of a sparse read (`sparse=1`): its data extents (`offset:length,...`), where to go on. */
export const FILE_EXTENTS_HEADER = 'x-forkbox-file-extents';
export const FILE_END_HEADER = 'x-forkbox-file-end';

/** An ETag as the ETag header carries it (quoted), and back (quotes and a weak prefix dropped). */
export const quoteEtag = (etag: string): string => `"${etag}"`;
export const unquoteEtag = (h: string): string =>
  h
    .trim()
    .replace(/^W\//, '')
    .replace(/^"(.*)"$/, '$1');

/** `offset:length,...` <-> extents. */
export const formatExtents = (ex: [number, number][]): string => ex.map(([o, l]) => `${o}:${l}`).join(',');
export function parseExtents(h: string): [number, number][] {
  if (h === '') return [];
  return h.split(',').map((p) => {
    const [o, l] = p.split(':').map(Number);
    return [o ?? 0, l ?? 0];
  });
}
/** Header naming the client session a request belongs to (see `sessions` in LocalAppOptions). */
export const SESSION_HEADER = 'x-forkbox-session';
/**
 * Header in which a client names itself (`cli`, `mcp-stdio`) for the audit log: a claim, recorded as
 * such; the caller's verified identity is the socket peer's uid (SO_PEERCRED) or the bearer token.
 */
export const CLIENT_HEADER = 'x-forkbox-client';
