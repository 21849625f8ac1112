/**
 * Conformance fixtures for the 2025-11-25 wire (`forkbox serve --conformance-fixtures` only): tools that
 * send sampling and elicitation requests to the client over a legacy session, with the schemas the
 * suite's SEP-1034/SEP-1330 scenarios check, and the JSON Schema 2020-12 tool of SEP-1613/SEP-2106.
 */
import type { CallToolResult, McpServer } from '@modelcontextprotocol/server';
import { fromJsonSchema } from '@modelcontextprotocol/server';
import { z } from 'zod';

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });
function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** 2025-11-25 server→client requests on a legacy session (the 2026 wire uses the MRTR tools below). */
export function registerLegacyClientRequestTools(server: McpServer): void {
  server.registerTool(
    'test_sampling',
    {
      description: 'Tests server-initiated sampling (LLM completion request)',
      inputSchema: z.object({ prompt: z.string().describe('The prompt to send to the LLM') }),
    },
    async ({ prompt }, ctx) => {
      try {
        const r = (await ctx.mcpReq.send({
          method: 'sampling/createMessage',
          params: { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 100 },
        })) as { content?: { text?: string } };
        return text(`LLM response: ${r.content?.text || 'No response'}`);
      } catch (e) {
        return text(`Sampling not supported or error: ${errorText(e)}`);
      }
    },
  );
  const elicitTool = (
    name: string,
    description: string,
    message: (args: { message?: string | undefined }) => string,
    schema: object,
    prefix: string,
  ) =>
    server.registerTool(
      name,
      {
        description,
        inputSchema: z.object({ message: z.string().optional().describe('The message to show the user') }),
      },
      async (args, ctx) => {
        try {
          const r = (await ctx.mcpReq.send({
            method: 'elicitation/create',
            params: { message: message(args), requestedSchema: schema },
          })) as { action?: string; content?: unknown };
          return text(`${prefix}: action=${r.action}, content=${JSON.stringify(r.content || {})}`);
        } catch (e) {
          return text(`Elicitation not supported or error: ${errorText(e)}`);
        }
      },
    );
  elicitTool(
    'test_elicitation',
    'Tests server-initiated elicitation (user input request)',
    (a) => a.message ?? '',
    {
      type: 'object',
      properties: { response: { type: 'string', description: "User's response" } },
      required: ['response'],
    },
    'User response',
  );
  elicitTool(
    'test_elicitation_sep1034_defaults',
    'Tests elicitation with default values per SEP-1034',
    () => 'Please review and update the form fields with defaults',
    SEP1034_SCHEMA,
    'Elicitation completed',
  );
  elicitTool(
    'test_elicitation_sep1330_enums',
    'Tests elicitation with enum schema improvements per SEP-1330',
    () => 'Please select options from the enum fields',
    SEP1330_SCHEMA,
    'Elicitation completed',
  );
}

/** SEP-1613 / SEP-2106: raw schemas reach tools/list unchanged; SEP-2243: x-mcp-header parameters. */
export function registerSchemaTools(server: McpServer): void {
  server.registerTool(
    'json_schema_2020_12_tool',
    {
      description: 'Tool with JSON Schema 2020-12 features',
      inputSchema: fromJsonSchema(JSON_SCHEMA_2020_12),
    },
    async (args: unknown) => text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`),
  );
  // SEP-2243: a parameter mirrored into an `Mcp-Param-Region` header, which the SDK checks against the body.
  server.registerTool(
    'test_headers',
    {
      description: 'Tool whose region parameter travels in the Mcp-Param-Region header too',
      inputSchema: fromJsonSchema({ type: 'object', properties: { region: REGION }, required: ['region'] }),
    },
    async (args: unknown) => text(`region: ${(args as { region?: unknown }).region}`),
  );
}

/** A variable, not a literal in place: `x-mcp-header` is an extension keyword the schema type lacks. */
const REGION = { type: 'string', 'x-mcp-header': 'Region' } as const;

const JSON_SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object' as const,
  $defs: {
    address: {
      $anchor: 'addressDef',
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string' } },
    },
  },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else keyword; this object is never awaited.
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
};

const SEP1034_SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'User name', default: 'John Doe' },
    age: { type: 'integer', description: 'User age', default: 30 },
    score: { type: 'number', description: 'User score', default: 95.5 },
    status: {
      type: 'string',
      description: 'User status',
      enum: ['active', 'inactive', 'pending'],
      default: 'active',
    },
    verified: { type: 'boolean', description: 'Verification status', default: true },
  },
  required: [],
};

const SEP1330_SCHEMA = {
  type: 'object',
  properties: {
    untitledSingle: {
      type: 'string',
      description: 'Select one option',
      enum: ['option1', 'option2', 'option3'],
    },
    titledSingle: {
      type: 'string',
      description: 'Select one option with titles',
      oneOf: [
        { const: 'value1', title: 'First Option' },
        { const: 'value2', title: 'Second Option' },
        { const: 'value3', title: 'Third Option' },
      ],
    },
    legacyEnum: {
      type: 'string',
      description: 'Select one option (legacy)',
      enum: ['opt1', 'opt2', 'opt3'],
      enumNames: ['Option One', 'Option Two', 'Option Three'],
    },
    untitledMulti: {
      type: 'array',
      description: 'Select multiple options',
      minItems: 1,
      maxItems: 3,
      items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
    },
    titledMulti: {
      type: 'array',
      description: 'Select multiple options with titles',
      minItems: 1,
      maxItems: 3,
      items: {
        anyOf: [
          { const: 'value1', title: 'First Choice' },
          { const: 'value2', title: 'Second Choice' },
          { const: 'value3', title: 'Third Choice' },
        ],
      },
    },
  },
  required: [],
};
