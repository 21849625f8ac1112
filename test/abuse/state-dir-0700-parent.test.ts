/**
 * Attack (a careless operator rather than a sandbox): put the state dir under a directory of mode 0700
 * — a root home directory, a hardened `/srv`, `mktemp -d`. Precedent: issue #11 item 15 — the first
 * create failed deep inside runc with a bare "permission denied" while `forkbox doctor` said all was
 * well; the same class as container runtimes failing on rootfs paths their mapped root cannot search
 * (runc/podman "permission denied" on a 0700 parent with user namespaces).
 *
 * Contained when: `forkbox doctor` (the real CLI) fails its required check naming the directory and the
 * fix; a real create against that state dir fails with `requirement_missing` saying what to run (not
 * runc's message); and after that fix, doctor's check passes and the create works.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ERROR_CODES } from '../../src/domain/errors.ts';
import { type AbuseDaemon, startDaemon } from '../helpers/abuse.ts';
import { cliFor } from '../helpers/cli.ts';
import { MAIN_STATE_DIR, nativeUnavailable } from '../helpers/native.ts';

const why = nativeUnavailable();
const CHECK = 'sandboxes can reach the state dir';

interface Doctor {
  ok: boolean;
  checks: { name: string; ok: boolean; required: boolean; detail: string; fix?: string }[];
}

describe('abuse: a state dir under a 0700 parent directory', () => {
  let parent: string;
  let stateDir: string;
  let d: AbuseDaemon | undefined;

  before(async () => {
    if (why) throw new Error(`this abuse test needs the native runtime: ${why}`);
    mkdirSync('/var/tmp/forkbox-tests', { recursive: true });
    parent = mkdtempSync('/var/tmp/forkbox-tests/private-'); // mkdtemp: mode 0700
    chmodSync(parent, 0o700);
    stateDir = join(parent, 'state');
    mkdirSync(join(stateDir, 'images'), { recursive: true, mode: 0o700 });
    const image = readFileSync(join(MAIN_STATE_DIR, 'images', 'debian.json'), 'utf8');
    writeFileSync(join(stateDir, 'images', 'debian.json'), image);
    d = await startDaemon({ stateDir });
  });
  after(async () => {
    await d?.stop();
    rmSync(parent, { recursive: true, force: true });
  });

  const doctor = (): { status: number | null; report: Doctor } => {
    const r = cliFor(stateDir).run(['--json', 'doctor']);
    return { status: r.status, report: JSON.parse(r.stdout) as Doctor };
  };

  it('forkbox doctor fails, naming the directory and the fix', () => {
    const { status, report } = doctor();
    const c = report.checks.find((x) => x.name === CHECK);
    assert.ok(c, `doctor has the check '${CHECK}'`);
    assert.equal(c.ok, false);
    assert.equal(c.required, true);
    assert.match(c.detail, new RegExp(`${parent} has mode 0700`));
    assert.equal(c.fix, `chmod o+x ${parent}`);
    assert.equal(report.ok, false);
    assert.equal(status, ERROR_CODES.requirement_missing.exit);
  });

  it('a create fails with requirement_missing saying what to do, through the API and the CLI', async () => {
    await assert.rejects(
      d?.api.createSandbox({}) ?? Promise.reject(new Error('no daemon')),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, 'requirement_missing', e.message);
        assert.match(e.message, new RegExp(`chmod o\\+x ${parent}`));
        assert.doesNotMatch(e.message, /runc/);
        return true;
      },
    );
    const r = cliFor(stateDir).run(['create']);
    assert.equal(r.status, ERROR_CODES.requirement_missing.exit, r.stderr);
    assert.match(r.stderr, new RegExp(`chmod o\\+x ${parent}`));
  });

  it('after the fix, doctor passes the check and the create works', async () => {
    chmodSync(parent, 0o701);
    const c = doctor().report.checks.find((x) => x.name === CHECK);
    assert.equal(c?.ok, true, c?.detail);
    const sb = await d?.api.createSandbox({});
    assert.ok(sb);
    assert.equal((await d?.api.exec(sb.id, { argv: ['echo', 'reached'] }))?.stdout, 'reached\n');
    await d?.api.killSandbox(sb.id);
  });
});
