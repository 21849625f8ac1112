/**
 * The advertised tool list is portable and small (issue #12, items 7 and 8): every input schema stays
 * inside what Gemini function declarations, OpenAI strict function schemas and the MCP SDKs accept —
 * checked against Google's GenAI SDK `Schema` type and after the OpenAI Agents SDK's own strict
 * conversion (`mcpToFunctionTool(..., convertSchemasToStrict = true)`) — every argument is documented,
 * and tools/list costs at most 8,100 tokens (gpt-tokenizer, the o200k encoding).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { mcpToFunctionTool } from '@openai/agents-core';
import { countTokens } from 'gpt-tokenizer';
import { PORTABLE_KEYWORDS } from '../../src/protocol/mcp/kit/portable-schema.ts';
import { createDefaultSandbox, createForkboxMcpServer } from '../../src/protocol/mcp/server.ts';
import { createTestEngine } from '../helpers/test-engine.ts';

const TOKEN_BUDGET = 8100;

type Json = Record<string, unknown>;

async function listTools() {
  const t = createTestEngine();
  const server = createForkboxMcpServer({
    api: t.api,
    defaults: createDefaultSandbox(),
    version: '0',
  });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(ct);
  const r = await client.listTools();
  await client.close();
  await server.close();
  await t.close();
  return r;
}

/** Every schema node of a JSON Schema, with its path. */
function* nodes(s: Json, path = ''): Generator<[string, Json]> {
  yield [path, s];
  for (const [k, v] of Object.entries((s.properties ?? {}) as Record<string, Json>))
    yield* nodes(v, `${path}.${k}`);
  if (s.items && typeof s.items === 'object') yield* nodes(s.items as Json, `${path}[]`);
  for (const key of ['anyOf', 'oneOf', 'allOf'])
    for (const [i, v] of ((s[key] ?? []) as Json[]).entries()) yield* nodes(v, `${path}.${key}[${i}]`);
}

/** The fields of Gemini's `Schema` type, read from the installed @google/genai declarations. */
function geminiSchemaFields(): Set<string> {
  const dts = readFileSync(
    createRequire(import.meta.url)
      .resolve('@google/genai')
      .replace(/dist\/.*$/, 'dist/genai.d.ts'),
    'utf8',
  );
  const body = /export declare interface Schema \{([\s\S]*?)\n\}/.exec(dts)?.[1];
  assert.ok(body, 'found the Schema interface in @google/genai');
  return new Set([...body.matchAll(/^\s{4}(\w+)\??:/gm)].map((m) => m[1] as string));
}

/**
 * OpenAI strict function-schema rules (Structured Outputs, "Supported schemas"): every object lists its
 * properties, all of them required, with additionalProperties false; optional values are nullable; only
 * the supported keywords appear.
 */
const STRICT_KEYWORDS = new Set([
  'type',
  'description',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'anyOf',
  'minItems',
  'maxItems',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'pattern',
  'format',
]);
function strictProblems(schema: Json): string[] {
  const out: string[] = [];
  for (const [path, n] of nodes(schema)) {
    for (const k of Object.keys(n)) if (!STRICT_KEYWORDS.has(k)) out.push(`${path}: keyword ${k}`);
    const isObject = n.type === 'object' || (Array.isArray(n.type) && n.type.includes('object'));
    if (!isObject) continue;
    if (n.additionalProperties !== false) out.push(`${path}: additionalProperties is not false`);
    const props = Object.keys((n.properties ?? {}) as Json);
    if (n.properties === undefined) out.push(`${path}: object without properties`);
    const req = new Set((n.required ?? []) as string[]);
    for (const p of props) if (!req.has(p)) out.push(`${path}.${p}: not required`);
  }
  return out;
}

describe('advertised tool schemas', () => {
  it('use only the portable keywords: no $schema, maps, unions, nullables or refs', async () => {
    const { tools } = await listTools();
    const gemini = geminiSchemaFields();
    for (const k of PORTABLE_KEYWORDS) assert.ok(gemini.has(k), `Gemini's Schema has ${k}`);
    for (const t of tools) {
      for (const [path, n] of nodes(t.inputSchema as Json)) {
        for (const k of Object.keys(n)) {
          assert.ok(PORTABLE_KEYWORDS.has(k), `${t.name}${path}: keyword ${k}`);
          assert.ok(gemini.has(k), `${t.name}${path}: ${k} is not in Gemini's Schema`);
        }
        assert.equal(typeof n.type, 'string', `${t.name}${path}: one type`);
        if (n.type === 'object') assert.ok(n.properties, `${t.name}${path}: an object lists its properties`);
      }
      const text = JSON.stringify([t.inputSchema, t.outputSchema]);
      for (const bad of ['$schema', '$ref', 'propertyNames', '"title"']) {
        assert.ok(!text.includes(bad), `${t.name}: no ${bad}`);
      }
    }
  });

  it('every tool converts to an OpenAI strict function with the Agents SDK', async () => {
    const { tools } = await listTools();
    const server = { name: 'forkbox' } as never;
    for (const t of tools) {
      const f = mcpToFunctionTool(t as never, server, true) as { strict: boolean; parameters: Json };
      assert.equal(f.strict, true, `${t.name} converts strictly`);
      assert.deepEqual(strictProblems(f.parameters), [], `${t.name} is a valid strict schema`);
    }
  });

  it('document every argument and every tool', async () => {
    const { tools } = await listTools();
    for (const t of tools) {
      assert.ok((t.description ?? '').length >= 15, `${t.name} has a description`);
      for (const [name, p] of Object.entries((t.inputSchema.properties ?? {}) as Record<string, Json>)) {
        assert.ok(
          typeof p.description === 'string' && p.description.length > 3,
          `${t.name}.${name} is documented`,
        );
      }
    }
  });

  it(`cost at most ${TOKEN_BUDGET} tokens in tools/list`, async (t) => {
    const listed = await listTools();
    const tokens = countTokens(JSON.stringify(listed));
    t.diagnostic(`tools/list: ${listed.tools.length} tools, ${tokens} tokens (o200k)`);
    assert.ok(tokens <= TOKEN_BUDGET, `tools/list is ${tokens} tokens (budget ${TOKEN_BUDGET})`);
  });

  it('say nothing the model cannot act on: no CLI commands, exec_poll waits stay under client timeouts', async () => {
    const { tools } = await listTools();
    for (const t of tools)
      assert.doesNotMatch(JSON.stringify(t), /forkbox (ls|create|resume|kill)\b/, t.name);
    const poll = tools.find((t) => t.name === 'exec_poll');
    const wait = (poll?.inputSchema.properties as Record<string, Json> | undefined)?.wait_ms;
    assert.ok(typeof wait?.maximum === 'number' && wait.maximum <= 25_000, 'wait_ms at most 25 s');
    assert.match(poll?.description ?? '', /wait_ms \(max 25000\)/);
  });
});
