import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ForkboxError } from '../../src/domain/errors.ts';
import {
  encodeFrame,
  FrameDecoder,
  MAX_BODY_BYTES,
  MAX_HEADER_BYTES,
} from '../../src/runtimes/native/agent-link/agent-frame.ts';

function prefix(headerLen: number, bodyLen: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt32BE(headerLen, 0);
  b.writeUInt32BE(bodyLen, 4);
  return b;
}

function rawFrame(header: string, body = Buffer.alloc(0)): Buffer {
  const h = Buffer.from(header, 'utf8');
  return Buffer.concat([prefix(h.length, body.length), h, body]);
}

function assertProtocolError(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ForkboxError, `expected ForkboxError, got ${String(e)}`);
    assert.equal(e.code, 'agent_protocol');
    assert.match(e.message, pattern);
    return true;
  });
}

describe('agent frame codec', () => {
  it('round-trips header and binary body', () => {
    const body = Buffer.from([0, 1, 2, 255, 254, 10, 13]);
    const enc = encodeFrame({ t: 'req', id: 7, op: 'file.write', path: '/tmp/é' }, body);
    assert.equal(enc.readUInt32BE(4), body.length);
    const frames = new FrameDecoder().push(enc);
    assert.equal(frames.length, 1);
    assert.deepEqual(frames[0]?.header, { t: 'req', id: 7, op: 'file.write', path: '/tmp/é' });
    assert.deepEqual(frames[0]?.body, body);
  });

  it('decodes frames split byte by byte and merged in one chunk', () => {
    const a = encodeFrame({ t: 'ev', id: 1, kind: 'stdout', seq: 0 }, Buffer.from('hello'));
    const b = encodeFrame({ t: 'res', id: 1, ok: true, result: {} });
    const c = encodeFrame({ t: 'ev', id: 2, kind: 'stderr', seq: 0 }, Buffer.alloc(70_000, 7));
    const all = Buffer.concat([a, b, c]);

    const d1 = new FrameDecoder();
    const got = [];
    for (let i = 0; i < all.length; i++) got.push(...d1.push(all.subarray(i, i + 1)));
    assert.deepEqual(
      got.map((f) => [f.header.t, f.body.length]),
      [
        ['ev', 5],
        ['res', 0],
        ['ev', 70_000],
      ],
    );
    assert.equal(
      got[2]?.body.every((x) => x === 7),
      true,
    );
    assert.equal(d1.bufferedBytes, 0);

    const merged = new FrameDecoder().push(all);
    assert.equal(merged.length, 3);
    assert.equal(merged[0]?.body.toString(), 'hello');

    // Uneven splits that cut through prefixes, headers and bodies.
    const d3 = new FrameDecoder();
    const out = [
      ...d3.push(all.subarray(0, 3)),
      ...d3.push(all.subarray(3, a.length + 10)),
      ...d3.push(all.subarray(a.length + 10, all.length - 1)),
    ];
    assert.equal(out.length, 2);
    assert.ok(d3.bufferedBytes > 0);
    out.push(...d3.push(all.subarray(all.length - 1)));
    assert.equal(out.length, 3);
  });

  it('refuses an oversized header or body from the length prefix alone', () => {
    assertProtocolError(() => new FrameDecoder().push(prefix(MAX_HEADER_BYTES + 1, 0)), /header length/);
    assertProtocolError(() => new FrameDecoder().push(prefix(10, MAX_BODY_BYTES + 1)), /body length/);
    assertProtocolError(() => new FrameDecoder().push(prefix(0xffffffff, 0xffffffff)), /header length/);
    assertProtocolError(() => new FrameDecoder().push(prefix(1, 0)), /header length/);
  });

  it('accepts frames exactly at the limits', () => {
    const body = Buffer.alloc(MAX_BODY_BYTES, 1);
    const enc = encodeFrame({ t: 'res' }, body);
    const frames = new FrameDecoder().push(enc);
    assert.equal(frames[0]?.body.length, MAX_BODY_BYTES);
  });

  it('refuses headers that are not JSON objects with a string t', () => {
    assertProtocolError(() => new FrameDecoder().push(rawFrame('{not json')), /not UTF-8 JSON/);
    assertProtocolError(() => new FrameDecoder().push(rawFrame('[1,2]')), /not a JSON object/);
    assertProtocolError(() => new FrameDecoder().push(rawFrame('null')), /not a JSON object/);
    assertProtocolError(() => new FrameDecoder().push(rawFrame('{"id":1}')), /string field 't'/);
    assertProtocolError(() => new FrameDecoder().push(rawFrame('{"t":5}')), /string field 't'/);
    const badUtf8 = Buffer.concat([Buffer.from('{"t":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    assertProtocolError(
      () => new FrameDecoder().push(Buffer.concat([prefix(badUtf8.length, 0), badUtf8])),
      /UTF-8/,
    );
  });

  it('stays failed after an error', () => {
    const d = new FrameDecoder();
    assert.throws(() => d.push(rawFrame('[]')));
    assertProtocolError(() => d.push(encodeFrame({ t: 'res' })), /already failed/);
  });

  it('encoder refuses what the agent would refuse, with too_large', () => {
    assert.throws(
      () => encodeFrame({ t: 'req', big: 'x'.repeat(MAX_HEADER_BYTES) }),
      (e: unknown) => e instanceof ForkboxError && e.code === 'too_large',
    );
    assert.throws(
      () => encodeFrame({ t: 'req' }, Buffer.alloc(MAX_BODY_BYTES + 1)),
      (e: unknown) => e instanceof ForkboxError && e.code === 'too_large',
    );
  });
});
