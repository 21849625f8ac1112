/**
 * The official MCP conformance suite's fixtures (`forkbox serve --conformance-fixtures` only): the test
 * tools, resources and prompts its server scenarios call, with the names, contents and behaviour the
 * scenarios check (@modelcontextprotocol/conformance 0.2.0-alpha.12, both the 2025-11-25 and the
 * 2026-07-28 requirement sets). They touch no sandbox and no engine: they exist so the suite can
 * exercise forkbox's MCP plumbing (transports, eras, sessions, guards, multi-round-trip, caching hints)
 * end to end. They are never registered without the flag, so a production server lists only its own
 * tools. The tools are in conformance-content-tools.ts, conformance-notifying-tools.ts,
 * conformance-input-required.ts and conformance-legacy.ts; resources and prompts in conformance-resources.ts.
 */
import { randomBytes } from 'node:crypto';
import type { McpServer, ServerOptions } from '@modelcontextprotocol/server';
import { createRequestStateCodec } from '@modelcontextprotocol/server';
import { registerContentTools } from './conformance-content-tools.ts';
import { registerInputRequiredTools } from './conformance-input-required.ts';
import { registerLegacyClientRequestTools, registerSchemaTools } from './conformance-legacy.ts';
import { type FixtureNotifier, registerNotifyingTools } from './conformance-notifying-tools.ts';
import { registerFixturePrompts, registerFixtureResources } from './conformance-resources.ts';

export type { FixtureNotifier } from './conformance-notifying-tools.ts';

export interface ConformanceFixtures {
  /** Options the fixtures' server needs on top of forkbox's: capabilities and requestState integrity. */
  serverOptions(): Pick<ServerOptions, 'capabilities' | 'requestState'>;
  register(server: McpServer): void;
  /** The stateless handler's notifier, for list-changed events on `subscriptions/listen` streams. */
  setNotifier(notifier: FixtureNotifier): void;
}

export function createConformanceFixtures(): ConformanceFixtures {
  // requestState round-trips through the client: the tampered-state scenario checks that a modified
  // state is refused. The key lives as long as the listener, so every per-request server of a
  // stateless flow verifies what an earlier one minted.
  const codec = createRequestStateCodec<Record<string, unknown>>({ key: randomBytes(32) });
  let notifier: FixtureNotifier | undefined;
  const subscriptions = new Set<string>();

  return {
    serverOptions: () => ({
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        prompts: { listChanged: true },
        logging: {},
        completions: {},
      },
      requestState: { verify: (s, ctx) => codec.verify(s, ctx) },
    }),
    register(server) {
      registerContentTools(server);
      registerNotifyingTools(server, () => notifier);
      registerLegacyClientRequestTools(server);
      registerSchemaTools(server);
      registerInputRequiredTools(server, codec);
      registerFixtureResources(server, subscriptions);
      registerFixturePrompts(server);
    },
    setNotifier(n) {
      notifier = n;
    },
  };
}
