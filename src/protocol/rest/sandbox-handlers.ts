/** The /v1 handlers of sandboxes and snapshots: create, list, inspect, kill, fork, merge, diff, apply, ports, pause/resume, TTL. */
import type { ProgressEvent } from '../../service/api.ts';
import {
  type ApiFor,
  type Handlers,
  idParam,
  jsonBody,
  ndjson,
  stripUndefined,
  wantsNdjson,
} from './handler-support.ts';
import {
  createSandboxBody,
  diffBody,
  exposePortBody,
  extendBody,
  forkBody,
  killQuery,
  labelPair,
  listSandboxesQuery,
  mergeBody,
  parseOrThrow,
  snapshotBody,
  usageQuery,
} from './local-schemas.ts';

export function sandboxHandlers(A: ApiFor) {
  return {
    system: async (c) => c.json(await A(c).status()),
    createSandbox: async (c) => {
      const body = stripUndefined(parseOrThrow(createSandboxBody, await jsonBody(c), 'sandbox request'));
      if (!wantsNdjson(c)) return c.json(await A(c).createSandbox(body), 201);
      // Streamed: the pull of an image not yet in the store reports its progress before the result.
      return ndjson(c, (emit) =>
        A(c).createSandbox(body, { onProgress: (event: ProgressEvent) => emit({ type: 'progress', event }) }),
      );
    },
    listSandboxes: async (c) => {
      const q = parseOrThrow(listSandboxesQuery, c.req.query(), 'query');
      const labels: Record<string, string> = {};
      for (const raw of c.req.queries('label') ?? []) {
        const pair = parseOrThrow(labelPair, raw, 'label filter');
        const i = pair.indexOf('=');
        labels[pair.slice(0, i)] = pair.slice(i + 1);
      }
      const filter: { all?: boolean; labels?: Record<string, string>; namespace?: string } = {};
      if (q.all !== undefined) filter.all = q.all;
      if (q.namespace !== undefined) filter.namespace = q.namespace;
      if (Object.keys(labels).length > 0) filter.labels = labels;
      return c.json(await A(c).listSandboxes(filter));
    },
    getSandbox: async (c) => {
      const q = parseOrThrow(usageQuery, c.req.query(), 'query');
      return c.json(await A(c).getSandbox(idParam(c), q.usage ? { usage: true } : {}));
    },
    killSandbox: async (c) => {
      const q = parseOrThrow(killQuery, c.req.query(), 'query');
      const cascade = q.cascade === '1' || q.cascade === 'true';
      return c.json(
        await A(c).killSandbox(idParam(c), {
          ...(cascade ? { cascade: true } : {}),
          ...(q.namespace === undefined ? {} : { namespace: q.namespace }),
        }),
      );
    },
    diffSandboxes: async (c) => {
      const { a, b, ...rest } = parseOrThrow(diffBody, await jsonBody(c), 'diff request');
      return c.json(await A(c).diffSandboxes(a, b, stripUndefined(rest)));
    },
    applyProject: async (c) => c.json(await A(c).applyProject(idParam(c))),
    exposePort: async (c) => {
      const body = parseOrThrow(exposePortBody, await jsonBody(c), 'port request');
      return c.json(
        await A(c).exposePort(idParam(c), body.port, stripUndefined({ hostPort: body.hostPort })),
      );
    },
    listPorts: async (c) => c.json({ ports: await A(c).listPorts(idParam(c)) }),
    forkSandbox: async (c) => {
      const body = parseOrThrow(forkBody, await jsonBody(c), 'fork request');
      return c.json(await A(c).forkSandbox(idParam(c), stripUndefined(body)), 201);
    },
    mergeSandbox: async (c) => {
      const body = parseOrThrow(mergeBody, await jsonBody(c), 'merge request');
      return c.json(await A(c).mergeSandbox(idParam(c), body.winner));
    },
    createSnapshot: async (c) => {
      const body = parseOrThrow(snapshotBody, await jsonBody(c), 'snapshot request');
      return c.json(await A(c).createSnapshot(idParam(c), stripUndefined(body)), 201);
    },
    listSnapshots: async (c) => c.json(await A(c).listSnapshots()),
    getSnapshot: async (c) => c.json(await A(c).getSnapshot(idParam(c))),
    deleteSnapshot: async (c) => {
      const q = parseOrThrow(killQuery, c.req.query(), 'query');
      const cascade = q.cascade === '1' || q.cascade === 'true';
      return c.json(await A(c).deleteSnapshot(idParam(c), cascade ? { cascade: true } : {}));
    },
    restoreSnapshot: async (c) => {
      const body = parseOrThrow(forkBody, await jsonBody(c), 'restore request');
      return c.json(await A(c).restoreSnapshot(idParam(c), stripUndefined(body)), 201);
    },
    pauseSandbox: async (c) => c.json(await A(c).pauseSandbox(idParam(c))),
    resumeSandbox: async (c) => c.json(await A(c).resumeSandbox(idParam(c))),
    extendSandbox: async (c) => {
      const body = parseOrThrow(extendBody, await jsonBody(c), 'extend request');
      return c.json(await A(c).extendSandbox(idParam(c), body.ttlSeconds));
    },
  } satisfies Handlers;
}
