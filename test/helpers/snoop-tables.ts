/**
 * The tables the snooping abuse tests walk: every REST route and every canonical MCP tool that names a
 * sandbox, an exec or a snapshot, filled in with a victim's objects. A caller who may not see the victim
 * (another tenant; a token limited to other namespaces) must get not_found from each.
 */

/** The victim's objects, made by a caller who may see them. */
export interface Victim {
  box: string;
  name: string;
  /** A finished exec of `box`, and a background one still running. */
  exec: string;
  bgExec: string;
  snap: string;
  snapName: string;
}

export type Route = [method: string, path: string, body?: unknown];
export type ToolCall = [name: string, args: Record<string, unknown>];

/**
 * REST calls naming the victim's sandbox by each of `refs` (its id, name, `namespace/name`…), its execs
 * under the snooper's own sandbox `own`, and its snapshot by id and by name.
 */
export function restRoutesNaming(v: Victim, own: string, refs: readonly string[]): Route[] {
  const s = (id: string) => `/v1/sandboxes/${encodeURIComponent(id)}`;
  const routes: Route[] = [];
  for (const box of refs) {
    routes.push(
      ['GET', s(box)],
      ['GET', `${s(box)}?usage=1`],
      ['POST', `${s(box)}/exec`, { cmd: 'id' }],
      ['POST', `${s(box)}/execs`, { cmd: 'id' }],
      ['GET', `${s(box)}/execs`],
      ['GET', `${s(box)}/execs/${v.exec}`],
      ['POST', `${s(box)}/execs/${v.bgExec}/stdin?eof=1`, Buffer.from('x')],
      ['POST', `${s(box)}/execs/${v.bgExec}/cancel`],
      ['POST', `${s(box)}/code`, { code: '1' }],
      ['POST', `${s(box)}/code/reset`],
      ['GET', `${s(box)}/files/content?path=/tmp/secret.txt`],
      ['PUT', `${s(box)}/files/content?path=/tmp/secret.txt`, Buffer.from('overwritten')],
      ['GET', `${s(box)}/files/list?path=/tmp`],
      ['GET', `${s(box)}/files/stat?path=/tmp/secret.txt`],
      ['DELETE', `${s(box)}/files?path=/tmp/secret.txt`],
      ['POST', `${s(box)}/files/mkdir`, { path: '/tmp/snoop' }],
      ['POST', `${s(box)}/files/move`, { from: '/tmp/secret.txt', to: '/tmp/moved' }],
      ['POST', `${s(box)}/fork`, { n: 1 }],
      ['POST', `${s(box)}/merge`, { winner: own }],
      ['POST', `${s(own)}/merge`, { winner: box }],
      ['POST', '/v1/sandboxes/diff', { a: box, b: own }],
      ['POST', '/v1/sandboxes/diff', { a: own, b: box }],
      ['POST', `${s(box)}/snapshots`, { name: 'stolen' }],
      ['GET', `${s(box)}/ports/8000/`],
      ['GET', `${s(box)}/ports`],
      ['POST', `${s(box)}/ports`, { port: 8001 }],
      ['POST', `${s(box)}/pause`],
      ['POST', `${s(box)}/resume`],
      ['POST', `${s(box)}/extend`, { ttlSeconds: 1 }],
      ['DELETE', s(box)],
    );
  }
  routes.push(
    ['GET', `${s(own)}/execs/${v.exec}`],
    ['POST', `${s(own)}/execs/${v.bgExec}/stdin`, Buffer.from('x')],
    ['POST', `${s(own)}/execs/${v.bgExec}/cancel`],
  );
  for (const snap of [v.snap, v.snapName]) {
    routes.push(
      ['GET', `/v1/snapshots/${snap}`],
      ['POST', `/v1/snapshots/${snap}/restore`, { n: 1 }],
      ['DELETE', `/v1/snapshots/${snap}?cascade=1`],
      ['POST', '/v1/sandboxes/diff', { a: snap, b: own }],
    );
  }
  return routes;
}

/** The canonical toolset's calls naming the victim's sandbox `ref`, its execs and its snapshot. */
export function canonicalToolsNaming(v: Victim, own: string, ref: string): ToolCall[] {
  const sandbox = ref;
  return [
    ['sandbox_get', { sandbox }],
    ['exec_run', { sandbox, command: 'id' }],
    ['exec_start', { sandbox, command: 'id' }],
    ['exec_list', { sandbox }],
    ['exec_poll', { sandbox, exec_id: v.exec }],
    ['exec_write_stdin', { sandbox, exec_id: v.bgExec, data: 'x', eof: true }],
    ['exec_cancel', { sandbox, exec_id: v.bgExec }],
    ['code_run', { sandbox, code: '1' }],
    ['code_reset', { sandbox }],
    ['file_read', { sandbox, path: '/tmp/secret.txt' }],
    ['file_write', { sandbox, path: '/tmp/secret.txt', content: 'overwritten' }],
    ['file_edit', { sandbox, path: '/tmp/secret.txt', old_string: 'x', new_string: 'y' }],
    ['file_list', { sandbox, path: '/tmp' }],
    ['file_stat', { sandbox, path: '/tmp/secret.txt' }],
    ['file_move', { sandbox, from: '/tmp/secret.txt', to: '/tmp/moved' }],
    ['file_delete', { sandbox, path: '/tmp/secret.txt' }],
    ['wait_for_text', { sandbox, path: '/tmp/secret.txt', marker: 'x', timeout_s: 0 }],
    ['sandbox_fork', { sandbox, n: 1 }],
    ['sandbox_merge', { parent: sandbox, winner: own }],
    ['sandbox_merge', { parent: own, winner: sandbox }],
    ['sandbox_diff', { a: sandbox, b: own }],
    ['snapshot_create', { sandbox, name: 'stolen-mcp' }],
    ['sandbox_pause', { sandbox }],
    ['sandbox_resume', { sandbox }],
    ['sandbox_extend', { sandbox, ttl_s: 1 }],
    ['sandbox_kill', { sandbox }],
    ['exec_poll', { sandbox: own, exec_id: v.exec }],
    ['exec_cancel', { sandbox: own, exec_id: v.bgExec }],
    ['snapshot_get', { snapshot: v.snap }],
    ['snapshot_restore', { snapshot: v.snap, n: 1 }],
    ['snapshot_delete', { snapshot: v.snap, cascade: true }],
  ];
}

/** The list calls whose answers must show none of the victim's ids. */
export const REST_LISTS = ['/v1/sandboxes', '/v1/sandboxes?all=1', '/v1/snapshots'] as const;
export const CANONICAL_LISTS: readonly ToolCall[] = [
  ['sandbox_list', { all: true }],
  ['snapshot_list', {}],
];
