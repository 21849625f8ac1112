/**
 * The TCP listener over a native fixture's engine with a token file naming tenants (`TOKEN TENANT` per
 * line, written 0600 in the state dir), on a free loopback port: the set-up of every test that drives
 * the listener as two or more tenants. A key may carry the line's namespace field too (`'team-a ns1'`:
 * the token of tenant team-a limited to namespace ns1).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Listener, type ListenerOptions, startListener } from '../../src/transports/http-listener.ts';
import type { NativeFixture } from './native.ts';

export async function startTenantListener(
  fx: NativeFixture,
  tokens: Readonly<Record<string, string>>,
  extra: Partial<ListenerOptions> = {},
): Promise<{ listener: Listener; base: string }> {
  const tokenFile = join(fx.stateDir, 'tokens');
  const lines = Object.entries(tokens).map(([tenant, token]) => `${token} ${tenant}\n`);
  writeFileSync(tokenFile, lines.join(''), { mode: 0o600 });
  const listener = await startListener({
    engine: fx.opened.engine,
    version: 'test',
    host: '127.0.0.1',
    port: 0,
    tokenFile,
    stateDir: fx.stateDir,
    ...extra,
  });
  return { listener, base: listener.server.url };
}
