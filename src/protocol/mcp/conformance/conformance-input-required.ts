/**
 * Conformance fixtures (conformance-fixtures.ts): the SEP-2322 multi-round-trip tools (2026-07-28) —
 * elicitation, sampling, roots, request state across rounds, capability-dependent requests. On legacy
 * sessions the SDK's shim serves them.
 */
import type {
  CallToolResult,
  ClientCapabilities,
  InputRequiredResult,
  McpServer,
  RequestStateCodec,
  ServerContext,
} from '@modelcontextprotocol/server';
import {
  acceptedContent,
  CLIENT_CAPABILITIES_META_KEY,
  inputRequired,
  inputResponse,
} from '@modelcontextprotocol/server';
import { noArgs, text } from './conformance-content-tools.ts';

/** The codec that mints and verifies the request states these tools hand out. */
export type FixtureStateCodec = RequestStateCodec<Record<string, unknown>>;

/** The elicitation request the suite's MRTR scenarios expect, keyed by the field it asks for. */
function elicitString(message: string, field: string) {
  return inputRequired.elicit({
    message,
    requestedSchema: { type: 'object', properties: { [field]: { type: 'string' } }, required: [field] },
  });
}

/** The client's declared capabilities: per request on 2026-07-28, from initialize on a legacy session. */
function clientCapabilities(server: McpServer, ctx: ServerContext): ClientCapabilities {
  const env = (ctx.mcpReq.envelope ?? {}) as Record<string, unknown>;
  const perRequest = env[CLIENT_CAPABILITIES_META_KEY];
  if (perRequest && typeof perRequest === 'object') return perRequest as ClientCapabilities;
  return server.server.getClientCapabilities() ?? {};
}

export function registerInputRequiredTools(server: McpServer, codec: FixtureStateCodec): void {
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
