/**
 * One tenant of the HTTP listener, over REST with its bearer token: the calls the two-tenant abuse tests
 * make (create a sandbox, run a command, run Python), each asserting the status it expects.
 */
import assert from 'node:assert/strict';
import type { Listener } from '../../src/transports/http-listener.ts';
import { token } from './attacks.ts';
import type { NativeFixture } from './native.ts';
import { startTenantListener } from './tenant-listener.ts';

export interface TenantRest {
  /** A new sandbox's id. */
  create(body?: Record<string, unknown>): Promise<string>;
  exec(
    id: string,
    body: { cmd?: string; argv?: string[]; timeoutSeconds?: number },
  ): Promise<{
    exitCode: number;
    stdout: string;
    stderr: string;
  }>;
  /** Python in the sandbox's REPL; fails the test when the code raises. */
  code(id: string, code: string): Promise<{ stdout: string; stderr: string; value?: string }>;
  /** Any other call (a Buffer body goes as raw bytes): status, body text and parsed body. */
  call(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; text: string; json: Record<string, unknown> }>;
}

export function tenantRest(base: string, token: string, name: string): TenantRest {
  async function call(method: string, path: string, body?: unknown) {
    const r = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined || Buffer.isBuffer(body) ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: Buffer.isBuffer(body) ? body : JSON.stringify(body) }),
    });
    const text = await r.text();
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      json = { text };
    }
    return { status: r.status, text, json };
  }
  const ok = async (method: string, path: string, body: unknown, status: number) => {
    const r = await call(method, path, body);
    assert.equal(r.status, status, `${name} ${method} ${path}: ${JSON.stringify(r.json)}`);
    return r.json;
  };
  return {
    async create(body = {}) {
      return (await ok('POST', '/v1/sandboxes', body, 201)).id as string;
    },
    async exec(id, body) {
      const j = await ok('POST', `/v1/sandboxes/${id}/exec`, { timeoutSeconds: 60, ...body }, 200);
      return {
        exitCode: j.exitCode as number,
        stdout: String(j.stdout ?? ''),
        stderr: String(j.stderr ?? ''),
      };
    },
    async code(id, code) {
      const j = await ok('POST', `/v1/sandboxes/${id}/code`, { code, timeoutSeconds: 60 }, 200);
      assert.equal(j.ok, true, `${name}'s code raised: ${JSON.stringify(j.error)} ${String(j.stderr ?? '')}`);
      return {
        stdout: String(j.stdout ?? ''),
        stderr: String(j.stderr ?? ''),
        ...(typeof j.value === 'string' ? { value: j.value } : {}),
      };
    },
    call,
  };
}

/** Two tenants of a fixture's listener, alice and bob, each with a sandbox of its own already made. */
export interface TwoTenants {
  listener: Listener;
  alice: TenantRest;
  bob: TenantRest;
  /** Alice's sandbox, then Bob's. */
  a: string;
  b: string;
}

export async function twoTenants(fx: NativeFixture): Promise<TwoTenants> {
  const tokens = { alice: `tok-a-${token('a')}`, bob: `tok-b-${token('b')}` };
  const { listener, base } = await startTenantListener(fx, tokens);
  const alice = tenantRest(base, tokens.alice, 'alice');
  const bob = tenantRest(base, tokens.bob, 'bob');
  return { listener, alice, bob, a: await alice.create(), b: await bob.create() };
}
