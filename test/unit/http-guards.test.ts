import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  checkHostAndOrigin,
  guardConfig,
  hostnameOf,
  isLoopbackHost,
} from '../../src/protocol/http/guards.ts';
import { checkListenSecurity } from '../../src/transports/http-listener.ts';
import { parseListen } from '../../src/transports/http-server.ts';

describe('listen address and security', () => {
  it('parses HOST:PORT and [v6]:PORT', () => {
    assert.deepEqual(parseListen('127.0.0.1:7777'), { host: '127.0.0.1', port: 7777 });
    assert.deepEqual(parseListen('[::1]:0'), { host: '::1', port: 0 });
    assert.deepEqual(parseListen('localhost:80'), { host: 'localhost', port: 80 });
    for (const bad of ['7777', '127.0.0.1', '1.2.3.4:99999', '::1:7777', 'a b:1'])
      assert.throws(() => parseListen(bad), /not HOST:PORT/, bad);
  });

  it('knows loopback addresses', () => {
    for (const h of ['127.0.0.1', '127.3.2.1', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1'])
      assert.ok(isLoopbackHost(h), h);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.2', 'example.com', '128.0.0.1'])
      assert.ok(!isLoopbackHost(h), h);
  });

  it('refuses a non-loopback listener without tokens, naming the flag', () => {
    assert.throws(() => checkListenSecurity('0.0.0.0', undefined), /--token-file/);
    assert.throws(() => checkListenSecurity('10.1.2.3', undefined), /refusing to listen on 10\.1\.2\.3/);
    checkListenSecurity('0.0.0.0', '/etc/forkbox/tokens');
    checkListenSecurity('127.0.0.1', undefined);
    checkListenSecurity('::1', undefined);
  });
});

describe('Host and Origin guard', () => {
  const loop = guardConfig({ listenHost: '127.0.0.1', port: 7777 });

  it('takes the hostname out of a Host header', () => {
    assert.equal(hostnameOf('Example.COM:80'), 'example.com');
    assert.equal(hostnameOf('[::1]:7777'), '[::1]');
    assert.equal(hostnameOf('localhost'), 'localhost');
  });

  it('on loopback accepts the localhost names, on any port in Host', () => {
    for (const h of ['127.0.0.1:7777', 'localhost:7777', '[::1]:7777', 'localhost'])
      assert.equal(checkHostAndOrigin(loop, h, undefined), undefined, h);
  });

  it('rejects a rebinding Host and a missing Host', () => {
    assert.match(checkHostAndOrigin(loop, 'evil.example:7777', undefined) ?? '', /--allow-host/);
    assert.match(checkHostAndOrigin(loop, undefined, undefined) ?? '', /Host/);
  });

  it('accepts no Origin and our exact origins; rejects others, including other local ports', () => {
    assert.equal(checkHostAndOrigin(loop, 'localhost:7777', 'http://localhost:7777'), undefined);
    assert.equal(checkHostAndOrigin(loop, 'localhost:7777', 'http://127.0.0.1:7777'), undefined);
    for (const o of ['http://evil.example', 'http://localhost:3000', 'https://localhost:7777', 'null'])
      assert.match(checkHostAndOrigin(loop, 'localhost:7777', o) ?? '', /--allow-origin/, o);
  });

  it('a specific non-loopback address accepts only itself and configured extras', () => {
    const cfg = guardConfig({
      listenHost: '10.0.0.5',
      port: 8080,
      allowHosts: ['forkbox.internal'],
      allowOrigins: ['https://app.example/'],
    });
    assert.equal(checkHostAndOrigin(cfg, '10.0.0.5:8080', undefined), undefined);
    assert.equal(checkHostAndOrigin(cfg, 'forkbox.internal', 'https://app.example'), undefined);
    assert.notEqual(checkHostAndOrigin(cfg, 'localhost:8080', undefined), undefined);
    assert.notEqual(checkHostAndOrigin(cfg, '10.0.0.5:8080', 'https://other.example'), undefined);
  });

  it('a wildcard listener accepts the localhost names and this machine’s addresses', () => {
    const cfg = guardConfig({ listenHost: '0.0.0.0', port: 1 });
    assert.equal(checkHostAndOrigin(cfg, '127.0.0.1:1', undefined), undefined);
    assert.notEqual(checkHostAndOrigin(cfg, 'evil.example:1', undefined), undefined);
  });
});
