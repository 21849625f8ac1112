/**
 * The local API's wire constants shared by the server (local-app.ts, api-routes.ts) and its client
 * (transports/daemon-client.ts). Dependency-free on purpose: the CLI imports this without loading the
 * server's routes, zod schemas or Hono.
 */

/** Content type of streaming responses: one JSON object per line. */
export const NDJSON = 'application/x-ndjson';
/** Response header carrying a file's full size on GET .../files/content. */
export const FILE_SIZE_HEADER = 'x-forkbox-file-size';
/** Header naming the client session a request belongs to (see `sessions` in LocalAppOptions). */
export const SESSION_HEADER = 'x-forkbox-session';
/**
 * Header in which a client names itself (`cli`, `mcp-stdio`) for the audit log: a claim, recorded as
 * such; the caller's verified identity is the socket peer's uid (SO_PEERCRED) or the bearer token.
 */
export const CLIENT_HEADER = 'x-forkbox-client';
