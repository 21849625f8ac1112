/**
 * The web console's pure parts: the session cookie, the fork forest, formatting, diff notes, escaping,
 * notices, the file browser's paths and names, and the body bounds.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  clearedCookie,
  cookieValue,
  isHttps,
  sessionCookie,
} from '../../src/protocol/console/auth/cookie.ts';
import { createConsoleSessions } from '../../src/protocol/console/auth/sessions.ts';
import { sandboxPath, uploadName } from '../../src/protocol/console/files-routes.ts';
import { bytes, duration, ttlLeft } from '../../src/protocol/console/format.ts';
import { h } from '../../src/protocol/console/markup.ts';
import { fileDiffOf } from '../../src/protocol/console/pages/diff-page.ts';
import { splitRows } from '../../src/protocol/console/pages/diff-split.ts';
import { downloadName, isText, parentOf, UPLOAD_BYTES } from '../../src/protocol/console/pages/files-page.ts';
import { noticeQuery, noticeText } from '../../src/protocol/console/pages/notice.ts';
import { loadTerminalAssets, TERMINAL_CSP } from '../../src/protocol/console/pages/terminal-page.ts';
import { buildForest } from '../../src/protocol/console/pages/tree.ts';
import { CONSOLE_BODY_LIMIT, consoleBodyLimit } from '../../src/protocol/console/routes.ts';

describe('console sessions', () => {
  it('expire, end at logout, refuse ids of another shape, and keep to their bounds', () => {
    let now = 1000;
    const s = createConsoleSessions({ ttlMs: 100, perTenant: 2, total: 3, now: () => now });
    const a = s.open('tok-a', 'alice');
    assert.equal(s.get(a)?.tenant, 'alice');
    assert.equal(s.get(a)?.token, 'tok-a');
    assert.equal(s.get('tok-a'), undefined, 'a token is not a session id');
    assert.equal(s.get(`${a}x`), undefined);
    assert.equal(s.get(undefined), undefined);
    now += 100;
    assert.equal(s.get(a), undefined, 'expired');
    const b1 = s.open('tok-b', 'bob');
    const b2 = s.open('tok-b', 'bob');
    const b3 = s.open('tok-b', 'bob');
    assert.equal(s.get(b1), undefined, "a tenant's third session ends its oldest");
    assert.ok(s.get(b2) && s.get(b3));
    const c = s.open('tok-c', 'carol');
    const d = s.open('tok-d', 'dave');
    assert.equal(s.size(), 3);
    assert.equal(s.get(b2), undefined, 'past the total bound the oldest of all ends');
    assert.ok(s.get(c) && s.get(d));
    s.end(c);
    assert.equal(s.get(c), undefined);
    s.end('unknown');
    s.end(undefined);
  });
});

describe('console session cookie', () => {
  it('is HttpOnly, SameSite=Strict, Path=/console; Secure only over HTTPS', () => {
    const c = sessionCookie('tok en;=', false);
    assert.match(
      c,
      /^forkbox_console=tok%20en%3B%3D; Path=\/console; HttpOnly; SameSite=Strict; Max-Age=\d+$/,
    );
    assert.match(sessionCookie('t', true), /; Secure$/);
    assert.match(clearedCookie(false), /^forkbox_console=; .*Max-Age=0$/);
  });
  it('reads its value back among other cookies, and ignores look-alikes and bad encodings', () => {
    assert.equal(cookieValue('a=1; forkbox_console=tok%20en%3B%3D; b=2'), 'tok en;=');
    assert.equal(cookieValue('xforkbox_console=1; forkbox_consolex=2'), undefined);
    assert.equal(cookieValue('forkbox_console=%E0%A4%A'), undefined);
    assert.equal(cookieValue('forkbox_console='), undefined);
    assert.equal(cookieValue(undefined), undefined);
  });
  it('knows HTTPS from the URL or a proxy’s X-Forwarded-Proto', () => {
    assert.equal(isHttps('https://x/console', undefined), true);
    assert.equal(isHttps('http://x/console', 'https, http'), true);
    assert.equal(isHttps('http://x/console', undefined), false);
  });
});

describe('console fork forest', () => {
  const sb = (id: string, parentId: string | null, t: number) => ({
    id,
    parentId,
    createdAt: new Date(t * 1000).toISOString(),
  });
  it('nests children under parents in creation order; an unseen parent makes a named root', () => {
    const forest = buildForest([sb('c2', 'p', 3), sb('p', null, 1), sb('c1', 'p', 2), sb('o', 'gone', 4)]);
    assert.deepEqual(
      forest.map((n) => [n.sandbox.id, n.missingParent, n.children.map((k) => k.sandbox.id)]),
      [
        ['p', null, ['c1', 'c2']],
        ['o', 'gone', []],
      ],
    );
  });
  it('never loops on a sandbox that names itself as its parent', () => {
    assert.equal(buildForest([sb('x', 'x', 1)]).length, 1);
  });
});

describe('console formatting and diffs', () => {
  it('formats durations, sizes and TTLs', () => {
    assert.equal(duration(42_000), '42s');
    assert.equal(duration(3_723_000), '1h 2m');
    assert.equal(bytes(512), '512 B');
    assert.equal(bytes(3 * 1024 * 1024), '3.0 MiB');
    assert.equal(ttlLeft(null, 0), 'none');
    assert.equal(ttlLeft(new Date(90_000).toISOString(), 0), '1m 30s');
    assert.equal(ttlLeft(new Date(0).toISOString(), 1), 'expiring');
  });
  it('tells a unified diff from a note (binary, too large)', () => {
    assert.equal(
      fileDiffOf('/a', '--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n').unified?.startsWith('---'),
      true,
    );
    assert.deepEqual(fileDiffOf('/b', '/b in B is binary\n'), { path: '/b', note: '/b in B is binary' });
    assert.deepEqual(fileDiffOf('/c', ''), { path: '/c', note: 'no text difference' });
  });
  it('escapes every interpolated string', () => {
    assert.equal(
      h`<td>${'<script>"x"</script>'}</td>`.toString(),
      '<td>&lt;script&gt;&quot;x&quot;&lt;/script&gt;</td>',
    );
  });
});

describe('console notices', () => {
  const read = (q: string) => {
    const p = new URLSearchParams(q);
    return noticeText((k) => p.get(k) ?? undefined);
  };
  it('round-trips the notices actions give', () => {
    assert.equal(read(noticeQuery({ done: 'forked', made: 2, of: 3 })), 'Forked 2 of 3.');
    assert.equal(read(noticeQuery({ done: 'snapshot', name: 'snap-1' })), 'Snapshot snap-1 taken.');
    assert.equal(read(noticeQuery({ done: 'killed' })), 'Sandbox killed.');
    assert.equal(read(noticeQuery({ done: 'uploaded', name: 'data.csv' })), 'Uploaded data.csv.');
    assert.equal(read(noticeQuery({ done: 'restored', name: 'snap-1' })), 'Restored from snapshot snap-1.');
    assert.equal(read(noticeQuery({ done: 'uploaded', name: 'a b <i>.txt' })), 'File uploaded.');
    assert.equal(
      read(noticeQuery({ done: 'ttl', minutes: 90 })),
      'It now ends in 90 minutes unless extended.',
    );
  });
  it('shows no text a crafted link supplies', () => {
    assert.equal(read('done=snapshot&name=Your+session+expired,+log+in+at+evil.example'), undefined);
    assert.equal(read('done=forked&made=1e9&of=1'), undefined);
    assert.equal(read('notice=anything'), undefined);
    assert.equal(read('done=ttl&minutes=soon'), undefined);
  });
});

describe('console file browser', () => {
  it('takes absolute sandbox paths only', () => {
    assert.equal(sandboxPath(undefined), '/');
    assert.equal(sandboxPath('/work/a b'), '/work/a b');
    for (const bad of ['work', '../etc', '/a\0b', `/${'x'.repeat(5000)}`])
      assert.throws(() => sandboxPath(bad), /not an absolute path/);
  });
  it('writes an upload under its last name component, never a path the browser sent', () => {
    assert.equal(uploadName('report.pdf'), 'report.pdf');
    assert.equal(uploadName('C:\\Users\\me\\report.pdf'), 'report.pdf');
    assert.equal(uploadName('../../etc/passwd'), 'passwd');
    for (const bad of ['', '..', 'dir/', '.']) assert.throws(() => uploadName(bad), /cannot be a file name/);
  });
  it('names downloads in safe characters and walks up paths', () => {
    assert.equal(downloadName('/work/out.csv'), 'out.csv');
    assert.equal(downloadName('/work/a"b;c\r\n.txt'), 'a_b_c__.txt');
    assert.equal(downloadName('/'), 'file');
    assert.equal(parentOf('/a/b/c'), '/a/b');
    assert.equal(parentOf('/a'), '/');
    assert.equal(parentOf('/a/b/'), '/a');
  });
  it('tells text from binary, a multi-byte character cut at the end included', () => {
    assert.equal(isText(Buffer.from('héllo\n')), true);
    assert.equal(isText(Buffer.from('héllo').subarray(0, 2)), false);
    assert.equal(isText(Buffer.concat([Buffer.from('abcd'), Buffer.from('é').subarray(0, 1)])), true);
    assert.equal(isText(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00])), false);
  });
  it('bounds an upload by the file size it allows, every other console body by the form bound', () => {
    assert.equal(consoleBodyLimit('/console/sandboxes/abc/upload'), UPLOAD_BYTES + 64 * 1024);
    assert.equal(consoleBodyLimit('/console/sandboxes/abc/repl'), CONSOLE_BODY_LIMIT);
    assert.equal(consoleBodyLimit('/console/sandboxes/a/b/upload'), CONSOLE_BODY_LIMIT);
  });
});

describe('console terminal page', () => {
  it("loosens only styles (xterm.js's <style> elements): scripts stay the daemon's own", () => {
    assert.match(TERMINAL_CSP, /style-src 'self' 'unsafe-inline';/);
    assert.match(TERMINAL_CSP, /script-src 'self';/);
    assert.doesNotMatch(TERMINAL_CSP.replace("style-src 'self' 'unsafe-inline'", ''), /unsafe/);
  });
  it('serves xterm.js and its fit add-on from node_modules, without source-map links', () => {
    const a = loadTerminalAssets();
    assert.match(a.xtermJs, /Terminal/);
    assert.match(a.fitJs, /FitAddon/);
    assert.match(a.xtermCss, /\.xterm/);
    assert.doesNotMatch(a.xtermJs + a.fitJs, /sourceMappingURL/);
  });
});

describe('console side-by-side diff', () => {
  it('pairs a run of removed lines with the added run after it, numbering each side', () => {
    const u =
      '--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n keep\n-two\n-three\n+TWO\n same\n@@ -10 +10,2 @@\n ten\n+eleven\n\\ No newline at end of file\n';
    assert.deepEqual(splitRows(u), [
      { kind: 'hunk', text: '@@ -1,4 +1,4 @@' },
      { kind: 'same', left: { n: 1, text: 'keep' }, right: { n: 1, text: 'keep' } },
      { kind: 'change', left: { n: 2, text: 'two' }, right: { n: 2, text: 'TWO' } },
      { kind: 'change', left: { n: 3, text: 'three' } },
      { kind: 'same', left: { n: 4, text: 'same' }, right: { n: 3, text: 'same' } },
      { kind: 'hunk', text: '@@ -10 +10,2 @@' },
      { kind: 'same', left: { n: 10, text: 'ten' }, right: { n: 10, text: 'ten' } },
      { kind: 'change', right: { n: 11, text: 'eleven' } },
    ]);
  });
});
