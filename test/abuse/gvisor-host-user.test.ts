/**
 * Attack: an unprivileged host user against gvisor sandboxes. A fork writes the source's whole memory to a
 * checkpoint image under /dev/shm, which every host user may write: a user who plants
 * `/dev/shm/forkbox-<state id>` (a directory of theirs, or a link) first would get every checkpoint in it.
 * And the gvisor state — roots, inboxes with their control sockets, identity files — must be closed to them.
 * Precedent: CVE-2018-16873-style planted temp directories; /dev/shm squatting in CWE-379.
 * Contained when: a fork with a planted directory fails `permission_denied` and writes nothing there; once
 * it is gone, forks work and their directory is root's, 0700, empty after the fork; as `nobody`, nothing
 * under `<state>/gvisor` can be listed, entered or connected to, and a sandbox's secret is unreadable.
 * A second tenant's gvisor sandbox sees no inbox or process of the first.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chownSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ForkboxError } from '../../src/domain/errors.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { PROBE_PRELUDE, token } from '../helpers/attacks.ts';
import { gvisorUnavailable, type NativeFixture, openNative } from '../helpers/native.ts';

const SECRET = token('GVSECRET');

const PROBE = `${PROBE_PRELUDE}
gv, sid = sys.argv[1], sys.argv[2]
for d in ("", "sandboxes", "sandboxes/" + sid, "sandboxes/%s/inbox" % sid, "sandboxes/%s/rootfs" % sid, "runsc"):
    attempt("list " + d, lambda d=d: os.listdir(os.path.join(gv, d)))
attempt("read the bundle", lambda: open(os.path.join(gv, "sandboxes", sid, "bundle", "config.json")).read())
def connect():
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.path.join(gv, "sandboxes", sid, "inbox", "ctl.sock"))
    return "connected"
attempt("connect ctl.sock", connect)
print(json.dumps(out))
`;

const asNobody = (args: string[]) =>
  spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--', ...args], {
    encoding: 'utf8',
  });

describe('abuse: a host user against gvisor sandboxes', () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id: string;
  let shm: string;

  before(async () => {
    const why = gvisorUnavailable();
    assert.equal(why, null, `the gvisor runtime cannot run here: ${why}`);
    fx = await openNative();
    api = fx.opened.api;
    id = (await api.createSandbox({ runtime: 'gvisor' })).id;
    const r = await api.exec(id, { cmd: `echo ${SECRET} > /root/secret.txt` });
    assert.equal(r.exitCode, 0, r.stderr);
    shm = `/dev/shm/forkbox-${readFileSync(join(fx.stateDir, 'state-id'), 'utf8').trim()}`;
  });
  after(async () => {
    rmSync(shm, { recursive: true, force: true });
    await fx?.close();
  });

  it('a checkpoint directory planted by a host user is refused, and nothing is written into it', async () => {
    rmSync(shm, { recursive: true, force: true });
    mkdirSync(shm, { mode: 0o777 });
    chownSync(shm, 65534, 65534);
    await assert.rejects(
      api.forkSandbox(id, { n: 1 }),
      (e: unknown) => e instanceof ForkboxError && e.code === 'permission_denied' && e.message.includes(shm),
    );
    assert.deepEqual(readdirSync(shm), [], 'nothing of the sandbox landed in the planted directory');
    assert.equal(
      (await api.exec(id, { cmd: 'cat /root/secret.txt' })).stdout.trim(),
      SECRET,
      'the source runs on',
    );

    rmSync(shm, { recursive: true, force: true });
    const f = await api.forkSandbox(id, { n: 1 });
    const kid = f.children[0]?.sandbox?.id;
    assert.ok(kid, JSON.stringify(f.children));
    const st = lstatSync(shm);
    assert.equal(st.uid, 0);
    assert.equal(st.mode & 0o777, 0o700);
    assert.deepEqual(
      readdirSync(shm).flatMap((d) => readdirSync(join(shm, d))),
      [],
      'no checkpoint image outlives its fork',
    );
    await api.killSandbox(kid);
  });

  it('as nobody, nothing under the gvisor state can be listed, read or connected to', () => {
    const r = asNobody(['/usr/bin/python3', '-c', PROBE, join(fx.stateDir, 'gvisor'), id]);
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as Record<string, string>;
    const got = Object.entries(out).filter(([, v]) => v.startsWith('ok'));
    assert.deepEqual(got, [], `a host user got in:\n${got.map(([k, v]) => `${k}: ${v}`).join('\n')}`);
    assert.ok(!r.stdout.includes(SECRET));
  });

  it("another tenant's gvisor sandbox sees no inbox, file or process of the first", async () => {
    const other = fx.opened.engine.scoped({ tenant: 'mallory' });
    const m = (await other.createSandbox({ runtime: 'gvisor' })).id;
    const r = await other.exec(m, {
      // The secret is searched for in two halves joined by the shell: `ps` shows the command, not the secret.
      cmd: `ls -a /.forkbox/inbox; ps -eo args; grep -rslF "$(printf %s ${SECRET.slice(0, 6)} ${SECRET.slice(6)})" / --exclude-dir=proc --exclude-dir=sys 2>/dev/null | head -1; true`,
      timeoutSeconds: 60,
    });
    assert.equal(r.exitCode, 0, r.stderr);
    assert.ok(!r.stdout.includes(SECRET), "the first tenant's secret is not reachable");
    assert.ok(!r.stdout.includes(id), `no trace of ${id}:\n${r.stdout}`);
    const inbox = r.stdout.split('\n').filter((l) => l !== '.' && l !== '..' && l.trim() !== '');
    assert.ok(
      inbox.every((l) => !l.includes('.sock') || l === 'ctl.sock'),
      r.stdout,
    );
    await other.killSandbox(m);
  });
});
