/**
 * The conformance suite's fixture resources, prompts, subscriptions and completions (registered only
 * with `forkbox serve --conformance-fixtures`; see conformance-fixtures.ts).
 */
import type { GetPromptResult, InputRequiredResult, McpServer } from '@modelcontextprotocol/server';
import { acceptedContent, inputRequired, ResourceTemplate } from '@modelcontextprotocol/server';
import { z } from 'zod';

/** A 1×1 PNG, as the suite's reference server sends it. */
export const TEST_IMAGE_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

/** Completion candidates for `test_prompt_with_arguments` (the suite asks for `arg1` starting "par"). */
const COMPLETIONS = ['paris', 'park', 'party', 'value1', 'value2'];

export function registerFixtureResources(server: McpServer, subscriptions: Set<string>): void {
  server.registerResource(
    'static-text',
    'test://static-text',
    {
      title: 'Static Text Resource',
      description: 'A static text resource for testing',
      mimeType: 'text/plain',
    },
    async () => ({
      contents: [
        {
          uri: 'test://static-text',
          mimeType: 'text/plain',
          text: 'This is the content of the static text resource.',
        },
      ],
    }),
  );
  server.registerResource(
    'static-binary',
    'test://static-binary',
    {
      title: 'Static Binary Resource',
      description: 'A static binary resource (image) for testing',
      mimeType: 'image/png',
    },
    async () => ({
      contents: [{ uri: 'test://static-binary', mimeType: 'image/png', blob: TEST_IMAGE_BASE64 }],
    }),
  );
  server.registerResource(
    'template',
    new ResourceTemplate('test://template/{id}/data', { list: undefined }),
    {
      title: 'Resource Template',
      description: 'A resource template with parameter substitution',
      mimeType: 'application/json',
    },
    async (uri, variables) => ({
      contents: [
        {
          uri: uri.toString(),
          mimeType: 'application/json',
          text: JSON.stringify({
            id: variables.id,
            templateTest: true,
            data: `Data for ID: ${variables.id}`,
          }),
        },
      ],
    }),
  );
  server.registerResource(
    'watched-resource',
    'test://watched-resource',
    { title: 'Watched Resource', description: 'A resource clients may subscribe to', mimeType: 'text/plain' },
    async () => ({
      contents: [
        { uri: 'test://watched-resource', mimeType: 'text/plain', text: 'Watched resource content' },
      ],
    }),
  );
  // resources/subscribe and /unsubscribe exist on the legacy (2025-11-25) wire only; 2026-07-28 clients
  // use subscriptions/listen, which the SDK serves.
  server.server.setRequestHandler('resources/subscribe', async (req) => {
    subscriptions.add(req.params.uri);
    return {};
  });
  server.server.setRequestHandler('resources/unsubscribe', async (req) => {
    subscriptions.delete(req.params.uri);
    return {};
  });
  server.server.setRequestHandler('completion/complete', async (req) => {
    const prefix = req.params.argument.value.toLowerCase();
    const values = COMPLETIONS.filter((v) => v.startsWith(prefix));
    return { completion: { values, total: values.length, hasMore: false } };
  });
}

export function registerFixturePrompts(server: McpServer): void {
  server.registerPrompt(
    'test_simple_prompt',
    { title: 'Simple Test Prompt', description: 'A simple prompt without arguments' },
    async (): Promise<GetPromptResult> => ({
      messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_arguments',
    {
      title: 'Prompt With Arguments',
      description: 'A prompt with required arguments',
      argsSchema: z.object({
        arg1: z.string().describe('First test argument'),
        arg2: z.string().describe('Second test argument'),
      }),
    },
    async ({ arg1, arg2 }): Promise<GetPromptResult> => ({
      messages: [
        {
          role: 'user',
          content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` },
        },
      ],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_embedded_resource',
    {
      title: 'Prompt With Embedded Resource',
      description: 'A prompt that includes an embedded resource',
      argsSchema: z.object({ resourceUri: z.string().describe('URI of the resource to embed') }),
    },
    async ({ resourceUri }): Promise<GetPromptResult> => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'resource',
            resource: {
              uri: resourceUri,
              mimeType: 'text/plain',
              text: 'Embedded resource content for testing.',
            },
          },
        },
        { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
      ],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_image',
    { title: 'Prompt With Image', description: 'A prompt that includes image content' },
    async (): Promise<GetPromptResult> => ({
      messages: [
        { role: 'user', content: { type: 'image', data: TEST_IMAGE_BASE64, mimeType: 'image/png' } },
        { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
      ],
    }),
  );
  // SEP-2322: input_required is not only for tools/call.
  server.registerPrompt(
    'test_input_required_result_prompt',
    { title: 'Prompt Needing Input', description: 'A prompt that asks the client for context first' },
    async (ctx): Promise<GetPromptResult | InputRequiredResult> => {
      const got = acceptedContent<{ context?: unknown }>(ctx.mcpReq.inputResponses, 'user_context');
      if (typeof got?.context !== 'string') {
        return inputRequired({
          inputRequests: {
            user_context: inputRequired.elicit({
              message: 'What context should the prompt use?',
              requestedSchema: {
                type: 'object',
                properties: { context: { type: 'string' } },
                required: ['context'],
              },
            }),
          },
        });
      }
      return {
        messages: [{ role: 'user', content: { type: 'text', text: `Use this context: ${got.context}` } }],
      };
    },
  );
}
