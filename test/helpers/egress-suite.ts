/**
 * The egress proxy's test set-up for one describe block: the test hosts (test-hosts.ts) serving
 * `hello.txt`, FORKBOX_EGRESS_HOSTS naming them for the proxy, and an engine on the native runtime —
 * made in a `before` hook, and undone (the variable restored) in an `after` hook. Call it inside the
 * describe; its fields are read in tests or later hooks.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { type AuditLine, type AuditLog, memoryAuditLog } from '../../src/protocol/audit.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type NativeFixture, openNative } from './native.ts';
import { startTestHosts, type TestHosts } from './test-hosts.ts';

export interface EgressSuite {
  readonly hosts: TestHosts;
  readonly fx: NativeFixture;
  readonly api: ForkboxApi;
}

export function egressSuite(opts: {
  /** FORKBOX_EGRESS_HOSTS for the engine: `name=address;…`. */
  hostsMap: string;
  /** The test hosts' `hello.txt`. */
  hello: string;
  native?: Parameters<typeof openNative>[0];
}): EgressSuite {
  let hosts: TestHosts | undefined;
  let fx: NativeFixture | undefined;
  let saved: string | undefined;
  before(async () => {
    hosts = await startTestHosts();
    writeFileSync(join(hosts.dir, 'hello.txt'), opts.hello);
    saved = process.env.FORKBOX_EGRESS_HOSTS;
    process.env.FORKBOX_EGRESS_HOSTS = opts.hostsMap;
    fx = await openNative(opts.native);
  });
  after(async () => {
    await fx?.close();
    hosts?.close();
    if (saved === undefined) delete process.env.FORKBOX_EGRESS_HOSTS;
    else process.env.FORKBOX_EGRESS_HOSTS = saved;
  });
  const ready = (): { hosts: TestHosts; fx: NativeFixture } => {
    if (!hosts || !fx) throw new Error('the egress set-up has not run');
    return { hosts, fx };
  };
  return {
    get hosts() {
      return ready().hosts;
    },
    get fx() {
      return ready().fx;
    },
    get api() {
      return ready().fx.opened.api;
    },
  };
}

export interface EgressSandboxSuite extends EgressSuite {
  /** The engine's audit log, in memory: egress decisions are among its lines. */
  readonly audit: AuditLog & { lines: AuditLine[] };
  /** The id of the sandbox made in the suite's `before` hook. */
  readonly sb: string;
}

/**
 * egressSuite with the engine's audit log kept in memory and one sandbox under `sandbox.network` made in
 * a `before` hook (after the engine's).
 */
export function egressSandboxSuite(opts: {
  hostsMap: string;
  hello: string;
  sandbox: { name: string; network: string };
}): EgressSandboxSuite {
  const audit = memoryAuditLog();
  const suite = egressSuite({ hostsMap: opts.hostsMap, hello: opts.hello, native: { audit } });
  let sb: string | undefined;
  before(async () => {
    sb = (await suite.api.createSandbox(opts.sandbox)).id;
  });
  return {
    audit,
    get hosts() {
      return suite.hosts;
    },
    get fx() {
      return suite.fx;
    },
    get api() {
      return suite.api;
    },
    get sb() {
      if (sb === undefined) throw new Error('the egress sandbox has not been made');
      return sb;
    },
  };
}
