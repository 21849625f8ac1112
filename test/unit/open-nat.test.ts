/**
 * The `open` NAT's command line (setpriv to the sandboxes' root uid with only the attach capabilities, then
 * slirp4netns in its own sandbox and seccomp, without host loopback) and its refusal to start before the
 * daemon has verified the host filter.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isForkboxError } from '../../src/domain/errors.ts';
import { createOpenNats, natArgv } from '../../src/network/open-nat.ts';

const log = { info() {}, warn() {} };

describe('open network NAT', () => {
  it('drops to the given uid with only the attach capabilities, then sandboxes slirp4netns', () => {
    const argv = natArgv('/usr/bin/setpriv', '/usr/bin/slirp4netns', 100000, 4242);
    const at = argv.indexOf('--');
    const setpriv = argv.slice(0, at);
    const slirp = argv.slice(at + 1);
    assert.deepEqual(setpriv.slice(0, 6), [
      '/usr/bin/setpriv',
      '--reuid',
      '100000',
      '--regid',
      '100000',
      '--clear-groups',
    ]);
    const caps = '-all,+sys_admin,+net_admin,+dac_override,+sys_ptrace';
    assert.equal(setpriv[setpriv.indexOf('--inh-caps') + 1], caps);
    assert.equal(setpriv[setpriv.indexOf('--ambient-caps') + 1], caps);
    assert.equal(setpriv[setpriv.indexOf('--bounding-set') + 1], `${caps},+net_bind_service`);
    assert.equal(slirp[0], '/usr/bin/slirp4netns');
    for (const flag of [
      '--enable-sandbox',
      '--enable-seccomp',
      '--disable-host-loopback',
      '--configure',
      '--mtu=65520',
    ])
      assert.ok(slirp.includes(flag), flag);
    assert.deepEqual(slirp.slice(-2), ['4242', 'tap0']);
  });

  it('refuses to start until the host filter is verified, and after it is found missing', async () => {
    const nats = createOpenNats({ uid: 100000, log });
    const refused = (e: unknown) => isForkboxError(e) && e.code === 'permission_denied';
    await assert.rejects(nats.start('sb', 1), refused);
    nats.setMissing("'nft' is not installed");
    await assert.rejects(nats.start('sb', 1), (e) => refused(e) && /'nft' is not installed/.test(String(e)));
    assert.equal(nats.pidOf('sb'), undefined);
  });
});
