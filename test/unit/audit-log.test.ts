import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { auditLine, memoryAuditLog } from '../../src/protocol/audit.ts';
import { auditFilters } from '../../src/protocol/console/pages/audit-page.ts';
import { auditMaxBytes, createAuditFile, tailLines } from '../../src/transports/audit-file.ts';

describe('audit log', () => {
  it('keeps only allow-listed fields', () => {
    // The fields a line keeps as they are.
    const kept = {
      door: 'socket' as const,
      tenant: 'alice',
      client: 'cli',
      uid: 0,
      pid: 4242,
      route: 'POST /v1/sandboxes/:id/exec',
      sandbox: 'sb-1',
      outcome: 'ok',
      status: 200,
    };
    const entry = {
      ...kept,
      durationMs: 12.6,
      // Things a careless caller might pass along: none may reach the line.
      token: 'secret-token',
      authorization: 'Bearer secret-token',
      body: 'file contents',
      env: { SECRET: 'x' },
    };
    const line = auditLine(entry, new Date(0));
    assert.deepEqual(line, { time: '1970-01-01T00:00:00.000Z', ...kept, duration_ms: 13 });
  });

  it('neutralises ids and names that could smuggle data or fake lines', () => {
    const line = auditLine({
      door: 'http',
      tenant: 'alice\n{"tenant":"root"}',
      client: 'cli"}\n{"uid":0',
      uid: -1,
      pid: 1.5,
      route: 'GET /x',
      tool: 'exec_run"; rm -rf /',
      sandbox: '../../etc/passwd',
      outcome: 'Not Found!',
      status: 404,
      durationMs: -5,
    });
    assert.equal(line.tenant, '?');
    assert.equal(line.client, '?');
    assert.equal(line.uid, undefined);
    assert.equal(line.pid, undefined);
    assert.equal(line.tool, '?');
    assert.equal(line.sandbox, '?');
    assert.equal(line.outcome, 'unknown');
    assert.equal(line.duration_ms, 0);
  });

  it('appends JSON lines to a 0600 file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fb-audit-'));
    try {
      const path = join(dir, 'audit.log');
      const log = createAuditFile(path);
      log.write({
        door: 'http',
        tenant: 'a',
        route: '/mcp',
        tool: 'exec_run',
        outcome: 'ok',
        status: 200,
        durationMs: 1,
      });
      log.write({
        door: 'socket',
        tenant: 'b',
        route: 'GET /v1/sandboxes',
        outcome: 'ok',
        status: 200,
        durationMs: 2,
      });
      await log.close();
      const lines = readFileSync(path, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.deepEqual(
        lines.map((l) => [l.tenant, l.tool]),
        [
          ['a', 'exec_run'],
          ['b', undefined],
        ],
      );
      assert.equal(statSync(path).mode & 0o777, 0o600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rotates to audit.log.1 past its size cap, so the trail stays bounded', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fb-audit-'));
    try {
      const path = join(dir, 'audit.log');
      const maxBytes = 4096;
      const log = createAuditFile(path, { maxBytes });
      const entry = { door: 'socket' as const, tenant: 'default', route: 'GET /v1/sandboxes' };
      for (let i = 0; i < 200; i++) log.write({ ...entry, outcome: 'ok', status: 200, durationMs: i });
      await log.close();
      assert.ok(statSync(path).size <= maxBytes, 'current file within the cap');
      assert.ok(statSync(`${path}.1`).size <= maxBytes, 'rotated file within the cap');
      assert.deepEqual(readdirSync(dir).sort(), ['audit.log', 'audit.log.1']);
      const last = readFileSync(path, 'utf8').trim().split('\n').at(-1) as string;
      assert.equal(JSON.parse(last).duration_ms, 199, 'the newest line is kept');
      assert.equal(statSync(`${path}.1`).mode & 0o777, 0o600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes its cap from the flag, else FORKBOX_AUDIT_MAX_SIZE, and refuses a tiny one', () => {
    assert.equal(auditMaxBytes('1m', undefined), 1024 * 1024);
    assert.equal(auditMaxBytes(undefined, '8k'), 8192);
    assert.equal(auditMaxBytes(undefined, undefined), 64 * 1024 * 1024);
    assert.throws(() => auditMaxBytes('100b', undefined), /at least 4096 bytes/);
  });

  it('reads back one tenant’s newest lines, filtered, from the tail of the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fb-audit-'));
    try {
      const path = join(dir, 'audit.log');
      const log = createAuditFile(path);
      const call = (tenant: string, sandbox: string, outcome: string, door: 'http' | 'socket' = 'http') =>
        log.write({
          door,
          tenant,
          route: 'POST /v1/sandboxes/:id/exec',
          sandbox,
          outcome,
          status: 200,
          durationMs: 1,
        });
      for (let i = 0; i < 5; i++) call('alice', `sb-a${i}`, i === 3 ? 'not_found' : 'ok');
      call('bob', 'sb-b0', 'ok');
      call('alice', 'sb-a0', 'ok', 'socket');
      appendFileSync(path, '{"time":"cut by a cra'); // a line a crash cut: skipped
      const q = { tenant: 'alice', limit: 10 };
      assert.deepEqual(
        log.recent(q).map((l) => l.sandbox),
        ['sb-a0', 'sb-a4', 'sb-a3', 'sb-a2', 'sb-a1', 'sb-a0'],
      );
      assert.deepEqual(log.recent({ ...q, limit: 2 }).length, 2);
      assert.deepEqual(
        log.recent({ ...q, outcome: 'error' }).map((l) => l.sandbox),
        ['sb-a3'],
      );
      assert.deepEqual(log.recent({ ...q, sandbox: 'sb-a0', door: 'http' }).length, 1);
      assert.deepEqual(
        log.recent({ tenant: 'bob', limit: 10 }).map((l) => l.sandbox),
        ['sb-b0'],
      );
      // Only whole lines of the last bytes: the first, cut in the middle, is dropped.
      assert.ok(tailLines(path, 200).length < 7);
      assert.deepEqual(tailLines(join(dir, 'absent.log')), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('shows a namespace-limited reader only the lines of callers limited to some of its namespaces', () => {
    const log = memoryAuditLog();
    const call = (sandbox: string, namespaces?: string[]) =>
      log.write({
        door: 'http',
        tenant: 'a',
        namespaces,
        route: 'GET /v1/sandboxes/:id',
        sandbox,
        outcome: 'ok',
        status: 200,
        durationMs: 1,
      });
    call('sb-wide');
    call('sb-ns1', ['ns1']);
    call('sb-ns2', ['ns2']);
    call('sb-both', ['ns1', 'ns2']);
    const seen = (namespaces?: string[]) =>
      log.recent({ tenant: 'a', namespaces, limit: 10 }).map((l) => l.sandbox);
    assert.deepEqual(seen(), ['sb-both', 'sb-ns2', 'sb-ns1', 'sb-wide']);
    assert.deepEqual(seen(['ns1']), ['sb-ns1']);
    assert.deepEqual(seen(['ns1', 'ns2']), ['sb-both', 'sb-ns2', 'sb-ns1']);
    assert.deepEqual(log.lines[1]?.namespaces, ['ns1'], 'the line keeps the limit');
  });

  it('takes the console’s audit filters from a closed set', () => {
    const q = (o: Record<string, string>) => (k: string) => o[k];
    assert.deepEqual(auditFilters(q({ sandbox: 'sb-1', door: 'socket', outcome: 'error' })), {
      sandbox: 'sb-1',
      door: 'socket',
      outcome: 'error',
    });
    assert.deepEqual(auditFilters(q({})), { sandbox: undefined, door: undefined, outcome: undefined });
    assert.throws(() => auditFilters(q({ door: 'pigeon' })), /door is one of/);
    assert.throws(() => auditFilters(q({ outcome: 'maybe' })), /ok or error/);
    assert.throws(() => auditFilters(q({ sandbox: '../x' })), /sandbox id/);
  });
});
