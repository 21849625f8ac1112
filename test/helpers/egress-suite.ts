/**
 * The egress proxy's test set-up for one describe block: the test hosts (test-hosts.ts) serving
 * `hello.txt`, FORKBOX_EGRESS_HOSTS naming them for the proxy, and an engine on the native runtime —
 * made in a `before` hook, and undone (the variable restored) in an `after` hook. Call it inside the
 * describe; its fields are read in tests or later hooks.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before } from 'node:test';
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
