/**
 * Network policy `allow` (real runtime): a sandbox reaches the names on its list, and only them, through
 * the daemon's egress proxy; `none` reaches nothing; a fork keeps its source's policy; every decision is
 * counted. The test hosts live in a network namespace this test makes, on documentation addresses
 * (test/helpers/test-hosts.ts); the proxy knows their names from FORKBOX_EGRESS_HOSTS, so nothing is
 * resolved by DNS and nothing but loopback and those hosts is ever connected to. pip and git through the
 * proxy: network-allow-tools.test.ts.
 */
import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { egressSandboxSuite } from '../helpers/egress-suite.ts';
import { nativeUnavailable } from '../helpers/native.ts';
import { HOST_SIDE, PORT, SERVER_A, SERVER_B } from '../helpers/test-hosts.ts';

const skip = nativeUnavailable();

/** The host's own non-loopback IPv4 addresses (its uplink): never reached, refused before any connect. */
function uplink(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((l) => l ?? [])
    .filter(
      (i) =>
        i.family === 'IPv4' &&
        !i.internal &&
        !i.address.startsWith('198.51.100.') &&
        !i.address.startsWith('203.0.113.'),
    )
    .map((i) => i.address);
}
const HOSTS_MAP = `files.test=${SERVER_A};other.test=${SERVER_B};meta.test=169.254.169.254;self.test=${HOST_SIDE};loop.test=127.0.0.1;mixed.test=${SERVER_A}|10.1.2.3`;
const POLICY = 'allow:files.test,meta.test,self.test,loop.test,mixed.test';
const BODY = 'wheel of cheese\n';

/** curl's HTTP status for a URL through the proxy the sandbox's environment names ('000': no answer). */
function curlStatus(url: string, extra: string[] = []): string[] {
  return ['curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '15', ...extra, url];
}

describe('network allow: egress through the filtering proxy', { skip: skip ?? false }, () => {
  const egress = egressSandboxSuite({
    hostsMap: HOSTS_MAP,
    hello: BODY,
    sandbox: { name: 'egress', network: POLICY },
  });
  const { audit } = egress;
  let api: ForkboxApi;
  let sb: string;
  before(() => {
    ({ api, sb } = egress);
  });

  it('shows the policy and gives commands the proxy variables', async () => {
    assert.equal((await api.getSandbox(sb)).network, POLICY);
    const r = await api.exec(sb, { cmd: 'echo "$HTTP_PROXY $https_proxy $NO_PROXY"' });
    assert.equal(r.stdout, 'http://127.0.0.1:3128 http://127.0.0.1:3128 localhost,127.0.0.1,::1\n');
  });

  it('fetches from an allowed name, by plain HTTP and through CONNECT, from commands and the REPL', async () => {
    const plain = await api.exec(sb, {
      argv: ['curl', '-sS', '--max-time', '15', `http://files.test:${PORT}/hello.txt`],
    });
    assert.equal(plain.stdout, BODY, plain.stderr);
    const tunnel = await api.exec(sb, {
      argv: ['curl', '-sS', '--proxytunnel', '--max-time', '15', `http://files.test:${PORT}/hello.txt`],
    });
    assert.equal(tunnel.stdout, BODY, tunnel.stderr);
    const repl = await api.runCode(sb, {
      code: `import urllib.request\nurllib.request.urlopen("http://files.test:${PORT}/hello.txt", timeout=15).read().decode()`,
    });
    assert.equal(repl.ok, true, JSON.stringify(repl));
    assert.match(repl.value ?? '', /wheel of cheese/);
    // The server saw the proxy's connections only: from the host side of the veth.
    assert.ok(egress.hosts.clients().length >= 3);
    assert.deepEqual([...new Set(egress.hosts.clients())], [HOST_SIDE]);
  });

  it('refuses names off the list, refused addresses by name or literal, and the host itself', async () => {
    const refused = [
      `http://other.test:${PORT}/hello.txt`, // a test host not on the list
      `http://${SERVER_A}:${PORT}/hello.txt`, // an allowed host by IP literal (no CIDR names it)
      `http://127.0.0.1:${PORT}/`, // the host's loopback
      `http://${HOST_SIDE}:${PORT}/`, // the host's own address (its side of the test veth)
      ...uplink().map((a) => `http://${a}:${PORT}/`), // the host's other addresses
      'http://169.254.169.254/latest/meta-data/', // the metadata address
      `http://meta.test:${PORT}/`, // allowed name resolving to the metadata address
      `http://self.test:${PORT}/`, // ... to the host's own address
      `http://loop.test:${PORT}/`, // ... to loopback
      `http://mixed.test:${PORT}/`, // ... to one good and one private address
      `http://nowhere.test:${PORT}/`, // a name that does not resolve (and is not listed)
    ];
    for (const url of refused) {
      // --noproxy '': through the proxy even for 127.0.0.1 (NO_PROXY sends it to the sandbox's own loopback).
      const r = await api.exec(sb, { argv: curlStatus(url, ['--noproxy', '']) });
      assert.equal(r.stdout, '403', `${url}: ${r.stdout} ${r.stderr}`);
      // Through CONNECT: the proxy's answer to the CONNECT itself is the 403.
      const t = await api.exec(sb, {
        argv: [
          'curl',
          '-s',
          '-o',
          '/dev/null',
          '-w',
          '%{http_connect}',
          '--max-time',
          '15',
          '--noproxy',
          '',
          '--proxytunnel',
          url,
        ],
      });
      assert.notEqual(t.exitCode, 0, `${url} through CONNECT`);
      assert.equal(t.stdout, '403', `${url} through CONNECT: ${t.stderr}`);
    }
    const counts = egress.fx.opened.metrics.read().egress;
    assert.ok(counts.refused >= refused.length * 2, JSON.stringify(counts));
    assert.ok(counts.accepted >= 3, JSON.stringify(counts));
    const lines = audit.lines.filter((l) => l.door === 'egress' && l.sandbox === sb);
    assert.ok(lines.some((l) => l.host === 'other.test' && l.port === PORT && l.outcome === 'refused'));
    assert.ok(lines.some((l) => l.host === 'files.test' && l.outcome === 'accepted'));
    assert.ok(lines.some((l) => l.host === '169.254.169.254' && l.outcome === 'refused'));
  });

  it('a CIDR on the list allows those addresses by literal', async () => {
    const c = (await api.createSandbox({ network: `allow:${SERVER_B}/32` })).id;
    const ok = await api.exec(c, {
      argv: ['curl', '-sS', '--max-time', '15', `http://${SERVER_B}:${PORT}/hello.txt`],
    });
    assert.equal(ok.stdout, BODY, ok.stderr);
    const other = await api.exec(c, { argv: curlStatus(`http://${SERVER_A}:${PORT}/hello.txt`) });
    assert.equal(other.stdout, '403');
    await api.killSandbox(c);
  });

  it('a fork keeps the policy (and its own proxy)', async () => {
    const f = await api.forkSandbox(sb, { n: 1 });
    const child = f.children[0];
    assert.ok(child?.ok && child.sandbox, JSON.stringify(f));
    const id = child.sandbox.id;
    assert.equal((await api.getSandbox(id)).network, POLICY);
    const r = await api.exec(id, {
      argv: ['curl', '-sS', '--max-time', '15', `http://files.test:${PORT}/hello.txt`],
    });
    assert.equal(r.stdout, BODY, r.stderr);
    const no = await api.exec(id, { argv: curlStatus(`http://other.test:${PORT}/`) });
    assert.equal(no.stdout, '403');
    await api.killSandbox(id);
    // The source's proxy still serves after its child's is gone.
    const again = await api.exec(sb, {
      argv: ['curl', '-sS', '--max-time', '15', `http://files.test:${PORT}/hello.txt`],
    });
    assert.equal(again.stdout, BODY, again.stderr);
  });

  it("'none' (the default) reaches nothing: no proxy, no route", async () => {
    const n = await api.createSandbox({});
    assert.equal(n.network, 'none');
    const env = await api.exec(n.id, {
      cmd: 'echo "[$HTTP_PROXY]"; test -e /.forkbox/inbox/net.sock && echo SOCKET',
    });
    assert.equal(env.stdout, '[]\n');
    const direct = await api.exec(n.id, { argv: curlStatus(`http://${SERVER_A}:${PORT}/hello.txt`) });
    assert.equal(direct.stdout, '000');
    const viaPort = await api.exec(n.id, {
      argv: curlStatus(`http://files.test:${PORT}/hello.txt`, ['--proxy', 'http://127.0.0.1:3128']),
    });
    assert.equal(viaPort.stdout, '000');
    await api.killSandbox(n.id);
  });

  it('refuses a malformed policy with a message saying the form', async () => {
    await assert.rejects(api.createSandbox({ network: 'allow:' }), /at least one entry/);
    await assert.rejects(api.createSandbox({ network: 'open-sesame' }), /'none', 'open' or 'allow:/);
    await assert.rejects(api.createSandbox({ network: 'allow:bad host' }), /not a host name/);
  });
});
