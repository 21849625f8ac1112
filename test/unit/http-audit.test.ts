import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { auditLine, createAuditLog } from '../../src/protocol/http/audit.ts';

describe('audit log', () => {
  it('keeps only allow-listed fields', () => {
    const entry = {
      tenant: 'alice',
      route: 'POST /v1/sandboxes/:id/exec',
      sandbox: 'sb-1',
      outcome: 'ok',
      status: 200,
      durationMs: 12.6,
      // Things a careless caller might pass along: none may reach the line.
      token: 'secret-token',
      authorization: 'Bearer secret-token',
      body: 'file contents',
      env: { SECRET: 'x' },
    };
    const line = auditLine(entry, new Date(0));
    assert.deepEqual(line, {
      time: '1970-01-01T00:00:00.000Z',
      tenant: 'alice',
      route: 'POST /v1/sandboxes/:id/exec',
      sandbox: 'sb-1',
      outcome: 'ok',
      status: 200,
      duration_ms: 13,
    });
  });

  it('neutralises ids and names that could smuggle data or fake lines', () => {
    const line = auditLine({
      tenant: 'alice\n{"tenant":"root"}',
      route: 'GET /x',
      tool: 'exec_run"; rm -rf /',
      sandbox: '../../etc/passwd',
      outcome: 'Not Found!',
      status: 404,
      durationMs: -5,
    });
    assert.equal(line.tenant, '?');
    assert.equal(line.tool, '?');
    assert.equal(line.sandbox, '?');
    assert.equal(line.outcome, 'unknown');
    assert.equal(line.duration_ms, 0);
  });

  it('appends JSON lines to a 0600 file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fb-audit-'));
    try {
      const path = join(dir, 'audit.log');
      const log = createAuditLog(path);
      log.write({ tenant: 'a', route: '/mcp', tool: 'exec_run', outcome: 'ok', status: 200, durationMs: 1 });
      log.write({ tenant: 'b', route: 'GET /v1/sandboxes', outcome: 'ok', status: 200, durationMs: 2 });
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
});
