/**
 * The official MCP conformance suite's fixtures (`forkbox serve --conformance-fixtures` only): the test
 * tools, resources and prompts its server scenarios call, with the names, contents and behaviour the
 * scenarios check (@modelcontextprotocol/conformance 0.2.0-alpha.12, both the 2025-11-25 and the
 * 2026-07-28 requirement sets). They touch no sandbox and no engine: they exist so the suite can
 * exercise forkbox's MCP plumbing (transports, eras, sessions, guards, multi-round-trip, caching hints)
 * end to end. They are never registered without the flag, so a production server lists only its own
 * tools.
 */
import { randomBytes } from 'node:crypto';
import type {
  CallToolResult,
  ClientCapabilities,
  InputRequiredResult,
  McpServer,
  ServerContext,
  ServerNotifier,
  ServerOptions,
} from '@modelcontextprotocol/server';
import {
  acceptedContent,
  CLIENT_CAPABILITIES_META_KEY,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  PROTOCOL_VERSION_META_KEY,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { registerLegacyClientRequestTools, registerSchemaTools } from './conformance-legacy.ts';
import {
  registerFixturePrompts,
  registerFixtureResources,
  TEST_IMAGE_BASE64,
} from './conformance-resources.ts';

/** A minimal WAV, as the suite's reference server sends it (the PNG lives in conformance-resources.ts). */
const TEST_AUDIO_BASE64 = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';

/** What the trigger tools publish to on the stateless (2026-07-28) wire. */
export type FixtureNotifier = Pick<ServerNotifier, 'toolsChanged' | 'promptsChanged'>;

export interface ConformanceFixtures {
  /** Options the fixtures' server needs on top of forkbox's: capabilities and requestState integrity. */
  serverOptions(): Pick<ServerOptions, 'capabilities' | 'requestState'>;
  register(server: McpServer): void;
  /** The stateless handler's notifier, for list-changed events on `subscriptions/listen` streams. */
  setNotifier(notifier: FixtureNotifier): void;
}

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });
const noArgs = z.object({});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The elicitation request the suite's MRTR scenarios expect, keyed by the field it asks for. */
function elicitString(message: string, field: string) {
  return inputRequired.elicit({
    message,
    requestedSchema: { type: 'object', properties: { [field]: { type: 'string' } }, required: [field] },
  });
}

function isModern(ctx: ServerContext): boolean {
  const env = (ctx.mcpReq.envelope ?? {}) as Record<string, unknown>;
  return typeof env[PROTOCOL_VERSION_META_KEY] === 'string';
}

/** The client's declared capabilities: per request on 2026-07-28, from initialize on a legacy session. */
function clientCapabilities(server: McpServer, ctx: ServerContext): ClientCapabilities {
  const env = (ctx.mcpReq.envelope ?? {}) as Record<string, unknown>;
  const perRequest = env[CLIENT_CAPABILITIES_META_KEY];
  if (perRequest && typeof perRequest === 'object') return perRequest as ClientCapabilities;
  return server.server.getClientCapabilities() ?? {};
}

export function createConformanceFixtures(): ConformanceFixtures {
  // requestState round-trips through the client: the tampered-state scenario checks that a modified
  // state is refused. The key lives as long as the listener, so every per-request server of a
  // stateless flow verifies what an earlier one minted.
  const codec = createRequestStateCodec<Record<string, unknown>>({ key: randomBytes(32) });
  let notifier: FixtureNotifier | undefined;
  const subscriptions = new Set<string>();

  function registerContentTools(server: McpServer): void {
    server.registerTool('test_simple_text', { description: 'Tests simple text content response' }, async () =>
      text('This is a simple text response for testing.'),
    );
    server.registerTool('test_image_content', { description: 'Tests image content response' }, async () => ({
      content: [{ type: 'image', data: TEST_IMAGE_BASE64, mimeType: 'image/png' }],
    }));
    server.registerTool('test_audio_content', { description: 'Tests audio content response' }, async () => ({
      content: [{ type: 'audio', data: TEST_AUDIO_BASE64, mimeType: 'audio/wav' }],
    }));
    server.registerTool(
      'test_embedded_resource',
      { description: 'Tests embedded resource content response' },
      async () => ({
        content: [
          {
            type: 'resource',
            resource: {
              uri: 'test://embedded-resource',
              mimeType: 'text/plain',
              text: 'This is an embedded resource content.',
            },
          },
        ],
      }),
    );
    server.registerTool(
      'test_multiple_content_types',
      { description: 'Tests response with multiple content types (text, image, resource)' },
      async () => ({
        content: [
          { type: 'text', text: 'Multiple content types test:' },
          { type: 'image', data: TEST_IMAGE_BASE64, mimeType: 'image/png' },
          {
            type: 'resource',
            resource: {
              uri: 'test://mixed-content-resource',
              mimeType: 'application/json',
              text: JSON.stringify({ test: 'data', value: 123 }),
            },
          },
        ],
      }),
    );
    server.registerTool('test_error_handling', { description: 'Tests error response handling' }, async () => {
      throw new Error('This tool intentionally returns an error for testing');
    });
  }

  function registerNotifyingTools(server: McpServer): void {
    server.registerTool(
      'test_tool_with_logging',
      { description: 'Tests tool that emits log messages during execution', inputSchema: noArgs },
      async (_a, ctx) => {
        for (const [i, data] of [
          'Tool execution started',
          'Tool processing data',
          'Tool execution completed',
        ].entries()) {
          if (i > 0) await sleep(50);
          await ctx.mcpReq.notify({ method: 'notifications/message', params: { level: 'info', data } });
        }
        return text('Tool with logging executed successfully');
      },
    );
    server.registerTool(
      'test_tool_with_progress',
      { description: 'Tests tool that reports progress notifications', inputSchema: noArgs },
      async (_a, ctx) => {
        const progressToken = ctx.mcpReq._meta?.progressToken ?? 0;
        for (const progress of [0, 50, 100]) {
          await ctx.mcpReq.notify({
            method: 'notifications/progress',
            params: { progressToken, progress, total: 100, message: `Completed step ${progress} of 100` },
          });
          if (progress !== 100) await sleep(50);
        }
        return text(String(progressToken));
      },
    );
    // 2026-07-28: log notifications only when the request asked for a level (the SDK filters them).
    server.registerTool(
      'test_logging_tool',
      { description: 'Logs one message through the request logger', inputSchema: noArgs },
      async (_a, ctx) => {
        await ctx.mcpReq.log('info', 'test_logging_tool ran');
        return text('logged');
      },
    );
    server.registerTool(
      'test_trigger_tool_change',
      { description: 'Announces a tool list change', inputSchema: noArgs },
      async (_a, ctx) => {
        if (isModern(ctx)) notifier?.toolsChanged();
        else server.sendToolListChanged();
        return text('tool list change announced');
      },
    );
    server.registerTool(
      'test_trigger_prompt_change',
      { description: 'Announces a prompt list change', inputSchema: noArgs },
      async (_a, ctx) => {
        if (isModern(ctx)) notifier?.promptsChanged();
        else server.sendPromptListChanged();
        return text('prompt list change announced');
      },
    );
  }

  /** SEP-2322 multi-round-trip tools (2026-07-28); on legacy sessions the SDK's shim serves them. */
  function registerInputRequiredTools(server: McpServer): void {
    const tool = (name: string, run: (ctx: ServerContext) => Promise<CallToolResult | InputRequiredResult>) =>
      server.registerTool(name, { description: `SEP-2322 fixture ${name}`, inputSchema: noArgs }, (_a, ctx) =>
        run(ctx),
      );
    const responses = (ctx: ServerContext) => ctx.mcpReq.inputResponses;
    const state = (ctx: ServerContext) => ctx.mcpReq.requestState<Record<string, unknown>>();

    tool('test_input_required_result_elicitation', async (ctx) => {
      const got = acceptedContent<{ name?: unknown }>(responses(ctx), 'user_name');
      if (typeof got?.name !== 'string') {
        return inputRequired({ inputRequests: { user_name: elicitString('What is your name?', 'name') } });
      }
      return text(`Hello, ${got.name}!`);
    });
    tool('test_input_required_result_sampling', async (ctx) => {
      const r = inputResponse(responses(ctx), 'capital_question');
      if (r.kind !== 'sampling') {
        return inputRequired({
          inputRequests: {
            capital_question: inputRequired.createMessage({
              messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
              maxTokens: 100,
            }),
          },
        });
      }
      const c = r.result.content;
      const answer = !Array.isArray(c) && c.type === 'text' ? c.text : JSON.stringify(c);
      return text(`Sampling response: ${answer}`);
    });
    tool('test_input_required_result_list_roots', async (ctx) => {
      const r = inputResponse(responses(ctx), 'client_roots');
      if (r.kind !== 'roots')
        return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
      return text(`Client roots: ${r.roots.map((x) => x.uri).join(', ') || '(none)'}`);
    });
    tool('test_input_required_result_request_state', async (ctx) => {
      const ok = inputResponse(responses(ctx), 'confirm');
      if (ok.kind !== 'elicit' || state(ctx)?.step !== 'confirm') {
        return inputRequired({
          inputRequests: {
            confirm: inputRequired.elicit({
              message: 'Please confirm',
              requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
            }),
          },
          requestState: await codec.mint({ step: 'confirm' }),
        });
      }
      return text(`state-ok: confirmed=${JSON.stringify(ok.content ?? {})}`);
    });
    tool('test_input_required_result_multiple_inputs', async (ctx) => {
      const rs = responses(ctx);
      const name = inputResponse(rs, 'user_name');
      const greeting = inputResponse(rs, 'greeting');
      const roots = inputResponse(rs, 'client_roots');
      if (
        name.kind !== 'elicit' ||
        greeting.kind !== 'sampling' ||
        roots.kind !== 'roots' ||
        state(ctx)?.step !== 'all'
      ) {
        return inputRequired({
          inputRequests: {
            user_name: elicitString('What is your name?', 'name'),
            greeting: inputRequired.createMessage({
              messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }],
              maxTokens: 50,
            }),
            client_roots: inputRequired.listRoots(),
          },
          requestState: await codec.mint({ step: 'all' }),
        });
      }
      return text(
        `All inputs received: name=${JSON.stringify(name.content ?? {})}, roots=${roots.roots.length}`,
      );
    });
    tool('test_input_required_result_multi_round', async (ctx) => {
      const s = state(ctx);
      const step1 = acceptedContent<{ name?: unknown }>(responses(ctx), 'step1');
      const step2 = acceptedContent<{ color?: unknown }>(responses(ctx), 'step2');
      if (s?.round === 2 && typeof step2?.color === 'string') {
        return text(`Multi-round complete: name=${String(s.name)}, color=${step2.color}`);
      }
      if (s?.round === 1 && typeof step1?.name === 'string') {
        return inputRequired({
          inputRequests: { step2: elicitString('Step 2: What is your favorite color?', 'color') },
          requestState: await codec.mint({ round: 2, name: step1.name }),
        });
      }
      return inputRequired({
        inputRequests: { step1: elicitString('Step 1: What is your name?', 'name') },
        requestState: await codec.mint({ round: 1 }),
      });
    });
    tool('test_input_required_result_tampered_state', async (ctx) => {
      // A tampered state never reaches here: the codec's verify hook refuses it with -32602.
      if (state(ctx)?.step === 'tamper-check' && inputResponse(responses(ctx), 'confirm').kind === 'elicit') {
        return text('state verified');
      }
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({
            message: 'Please confirm',
            requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
          }),
        },
        requestState: await codec.mint({ step: 'tamper-check' }),
      });
    });
    tool('test_input_required_result_capabilities', async (ctx) => {
      const caps = clientCapabilities(server, ctx);
      const requests: Record<string, ReturnType<typeof inputRequired.listRoots>> = {};
      if (caps.sampling && inputResponse(responses(ctx), 'sample').kind !== 'sampling') {
        requests.sample = inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'Say hello' } }],
          maxTokens: 20,
        });
      }
      if (caps.elicitation && inputResponse(responses(ctx), 'ask').kind !== 'elicit') {
        requests.ask = elicitString('What is your name?', 'name');
      }
      if (Object.keys(requests).length > 0) return inputRequired({ inputRequests: requests });
      return text('no input needed from the declared capabilities');
    });
    // SEP-2575: a tool that needs sampling asks for it; when the request did not declare the sampling
    // capability the SDK refuses the input request with -32021 (HTTP 400) instead of sending it.
    tool('test_missing_capability', async (ctx) => {
      if (inputResponse(responses(ctx), 'sample').kind === 'sampling') return text('sampled');
      return inputRequired({
        inputRequests: {
          sample: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'Say hello' } }],
            maxTokens: 20,
          }),
        },
      });
    });
    tool('test_streaming_elicitation', async (ctx) => {
      if (acceptedContent(responses(ctx), 'answer')) return text('answer received');
      // On the 2026 wire a server never sends requests on the response stream: it returns input_required.
      return inputRequired({ inputRequests: { answer: elicitString('Anything to add?', 'answer') } });
    });
  }

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
      registerNotifyingTools(server);
      registerLegacyClientRequestTools(server);
      registerSchemaTools(server);
      registerInputRequiredTools(server);
      registerFixtureResources(server, subscriptions);
      registerFixturePrompts(server);
    },
    setNotifier(n) {
      notifier = n;
    },
  };
}
