/** The /v1 handlers of host-level resources: images (build, import, pull, remove), templates, gc and df. */
import type { ProgressEvent } from '../../service/api.ts';
import {
  type ApiFor,
  type Handlers,
  jsonBody,
  ndjson,
  stripUndefined,
  wantsNdjson,
} from './handler-support.ts';
import {
  buildImageBody,
  defineTemplateBody,
  importImageBody,
  parseOrThrow,
  pullImageBody,
} from './local-schemas.ts';

export function adminHandlers(A: ApiFor) {
  return {
    listImages: async (c) => c.json(await A(c).listImages()),
    buildImage: async (c) => {
      const body = stripUndefined(parseOrThrow(buildImageBody, await jsonBody(c), 'image build request'));
      if (!wantsNdjson(c)) return c.json(await A(c).buildImage(body), 201);
      return ndjson(c, (emit) =>
        A(c).buildImage(body, (event: ProgressEvent) => emit({ type: 'progress', event })),
      );
    },
    importImage: async (c) => {
      const body = parseOrThrow(importImageBody, await jsonBody(c), 'image import request');
      if (!wantsNdjson(c)) return c.json(await A(c).importImage(body.name, body.source), 201);
      return ndjson(c, (emit) =>
        A(c).importImage(body.name, body.source, (event: ProgressEvent) => emit({ type: 'progress', event })),
      );
    },
    pullImage: async (c) => {
      const body = parseOrThrow(pullImageBody, await jsonBody(c), 'image pull request');
      if (!wantsNdjson(c)) return c.json(await A(c).pullImage(body.ref), 201);
      return ndjson(c, (emit) =>
        A(c).pullImage(body.ref, (event: ProgressEvent) => emit({ type: 'progress', event })),
      );
    },
    removeImage: async (c) => {
      await A(c).removeImage(c.req.param('name') as string);
      return c.json({ ok: true });
    },
    listTemplates: async (c) => c.json(await A(c).listTemplates()),
    defineTemplate: async (c) => {
      const body = parseOrThrow(defineTemplateBody, await jsonBody(c), 'template definition');
      return c.json(await A(c).defineTemplate(stripUndefined(body)), 201);
    },
    deleteTemplate: async (c) => c.json(await A(c).deleteTemplate(c.req.param('name') as string)),
    gc: async (c) => c.json(await A(c).gc()),
    df: async (c) => c.json(await A(c).df()),
  } satisfies Handlers;
}
