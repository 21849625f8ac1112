import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ForkboxError } from '../../src/domain/errors.ts';
import { createTokenStore, loadTokenFile, parseTokenFile } from '../../src/protocol/http/tokens.ts';

const A = 'aaaaaaaaaaaaaaaaaaaa-1';
const B = 'bbbbbbbbbbbbbbbbbbbb-2';

describe('token file', () => {
  it('parses TOKEN TENANT lines, skipping comments and blank lines', () => {
    const entries = parseTokenFile(`# header\n\n  ${A}   alice  \n# ${B} commented\n${B}\tbob\r\n`);
    assert.deepEqual(
      entries.map((e) => e.tenant),
      ['alice', 'bob'],
    );
    assert.ok(entries.every((e) => /^t-[0-9a-f]{16}$/.test(e.principal)));
  });

  it('rejects malformed lines naming the line, never echoing the token', () => {
    const cases: [string, RegExp][] = [
      [`${A}\n`, /line 1: expected 'TOKEN TENANT'/],
      [`# c\n${A} alice ns extra\n`, /line 2: expected/],
      [`${A} alice team,-bad\n`, /line 1: namespace '-bad' is not valid/],
      [`${A} alice ${Array.from({ length: 65 }, (_, i) => `n${i}`).join(',')}\n`, /at most 64 namespaces/],
      ['short alice\n', /line 1: tokens must be at least 16/],
      [`${A} -bad\n`, /line 1: tenant '-bad'/],
      [`${A} alice\n${A} bob\n`, /line 2: this token is listed twice/],
    ];
    for (const [text, re] of cases) {
      assert.throws(
        () => parseTokenFile(text),
        (e: unknown) => {
          assert.ok(e instanceof ForkboxError);
          assert.equal(e.code, 'invalid_argument');
          assert.match(e.message, re);
          assert.ok(!e.message.includes(A), 'the token is not in the message');
          return true;
        },
      );
    }
  });

  it('looks tokens up to their tenant; unknown, empty and prefix tokens are not found', () => {
    const store = createTokenStore(parseTokenFile(`${A} alice\n${B} bob\n`));
    assert.equal(store.lookup(A)?.tenant, 'alice');
    assert.equal(store.lookup(B)?.tenant, 'bob');
    assert.notEqual(store.lookup(A)?.principal, store.lookup(B)?.principal);
    assert.equal(store.lookup(''), undefined);
    assert.equal(store.lookup(A.slice(0, -1)), undefined);
    assert.equal(store.lookup(`${A}x`), undefined);
    assert.deepEqual(store.tenants(), ['alice', 'bob']);
  });

  it('a third field limits a token to namespaces (the first is its default)', () => {
    const store = createTokenStore(parseTokenFile(`${A} alice team,lab,team\n${B} alice\n`));
    assert.deepEqual(store.lookup(A)?.namespaces, ['team', 'lab']);
    assert.equal(store.lookup(B)?.namespaces, undefined, 'no third field: every namespace');
  });

  it('loads a file, reloads it, and keeps the old tokens when the new file is invalid', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fb-tokens-'));
    try {
      const f = join(dir, 'tokens');
      writeFileSync(f, `${A} alice\n`, { mode: 0o600 });
      const warnings: string[] = [];
      const store = loadTokenFile(f, (m) => warnings.push(m));
      assert.equal(warnings.length, 0);
      assert.equal(store.lookup(A)?.tenant, 'alice');
      writeFileSync(f, `${B} bob\n`);
      store.reload();
      assert.equal(store.lookup(A), undefined);
      assert.equal(store.lookup(B)?.tenant, 'bob');
      writeFileSync(f, 'garbage\n');
      assert.throws(() => store.reload(), /line 1/);
      assert.equal(store.lookup(B)?.tenant, 'bob', 'old tokens stay in force');
      writeFileSync(f, '# nothing\n');
      assert.throws(() => loadTokenFile(f), /no 'TOKEN TENANT' lines/);
      writeFileSync(f, `${A} alice\n`);
      chmodSync(f, 0o644);
      loadTokenFile(f, (m) => warnings.push(m));
      assert.match(warnings[0] ?? '', /chmod 600/);
      assert.throws(() => loadTokenFile(join(dir, 'missing')), /cannot read the token file/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
