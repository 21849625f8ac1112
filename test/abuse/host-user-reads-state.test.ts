/**
 * Attack: an unprivileged user of the host reads and runs what sandboxes keep in the state dir. With
 * `state/` and `sandboxes/` 0711 and uppers 0755, and sandbox ids listed by the world-readable cgroup tree,
 * `cat <state>/sandboxes/<id>/upper/tmp/secret.txt` worked as `nobody`; the storage mounts had no `nosuid`,
 * so a setuid file a sandbox made (owner: sandbox root) ran with that uid for any host user, who then wrote
 * another tenant's files and stopped its processes.
 * Precedent: the issue "Sandboxes that share nothing" (item 3, reproduced on this host); Docker keeps
 * /var/lib/docker 0710 root and its overlay dirs 0700; CVE-2021-41091 (moby: world-traversable data dirs
 * let host users run setuid programs of containers).
 * Contained when: as `nobody` (setpriv), nothing under the state dir that holds sandbox data is listable or
 * traversable — uppers, storage, layers, inboxes and their sockets, templates — no sandbox id can be listed
 * from the cgroup tree, the setuid file cannot be reached, and every mount under the state dir is nosuid
 * and nodev.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { readMountInfo } from '../../src/util/mountinfo.ts';
import { PROBE_PRELUDE, token } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip =
  nativeUnavailable() ??
  (spawnSync('setpriv', ['--version']).status === 0
    ? null
    : 'needs setpriv (util-linux) to act as a host user');

const SECRET = token('SECRET');

// As nobody: every way in, each answered "ok" (and what it got) or the errno name.
const PROBE = `${PROBE_PRELUDE}
state, sid, tid, cgroups = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
read = lambda p: open(p).read()
for p in ("sandboxes/%s/upper/tmp/secret.txt" % sid, "btrfs/sandboxes/%s/upper/tmp/secret.txt" % sid):
    attempt("read " + p, lambda p=p: read(os.path.join(state, p)))
for d in ("", "sandboxes", "btrfs", "btrfs/sandboxes", "btrfs/layers", "layers", "inbox", "templates",
          "templates/" + tid, "images", "disks", "projects", "tmp", "runc", "agent", "browsers"):
    attempt("list /" + d, lambda d=d: os.listdir(os.path.join(state, d)))
for p in ("sandboxes/%s/upper" % sid, "inbox/%s" % sid, "templates/%s/upper" % tid):
    attempt("enter " + p, lambda p=p: os.stat(os.path.join(state, p, ".")))
def connect():
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.path.join(state, "inbox", sid, "ctl.sock"))
    return "connected"
attempt("connect ctl.sock", connect)
def setuid_run():
    p = subprocess.run([os.path.join(state, "sandboxes", sid, "upper", "tmp", "rootsh"), "-p", "-c", "id -u"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise OSError(errno.EACCES, p.stderr)
    return p.stdout.strip()
attempt("run the setuid file", setuid_run)
for c in cgroups:
    attempt("list " + c, lambda c=c: os.listdir(c))
print(json.dumps(out))
`;

describe('abuse: a host user and the state dir', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id: string;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    id = (await api.createSandbox({})).id;
    const r = await api.exec(id, {
      cmd: `echo ${SECRET} > /tmp/secret.txt && cp /bin/bash /tmp/rootsh && chmod 4755 /tmp/rootsh`,
    });
    assert.equal(r.exitCode, 0, r.stderr.toString());
  });
  after(async () => {
    await fx?.close();
  });

  it('as nobody, nothing of a sandbox can be read, listed, entered, connected to or run', () => {
    const tid = readdirSync(join(fx.stateDir, 'templates'))[0] ?? 'none';
    const stateId = readFileSync(join(fx.stateDir, 'state-id'), 'utf8').trim();
    const cgroups = readMountInfo()
      .filter((m) => m.fsType === 'cgroup' || m.fsType === 'cgroup2')
      .map((m) => join(m.mountPoint, 'forkbox', stateId, 'sandboxes'));
    const r = spawnSync(
      'setpriv',
      [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        '--',
        '/usr/bin/python3',
        '-c',
        PROBE,
        fx.stateDir,
        id,
        tid,
        ...cgroups,
      ],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as Record<string, string>;
    const got = Object.entries(out).filter(([, v]) => v.startsWith('ok'));
    // The state dir itself may be entered (runc walks to a template's root as that template's root user).
    assert.deepEqual(got, [], `a host user got in:\n${got.map(([k, v]) => `${k}: ${v}`).join('\n')}`);
    assert.ok(!r.stdout.includes(SECRET));
  });

  it('every mount under the state dir is nosuid and nodev', () => {
    // Field 5 is the mount point, field 6 the mount's own options (proc(5)).
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' '))
      .filter((f) => f[4] === fx.stateDir || (f[4] ?? '').startsWith(`${fx.stateDir}/`));
    assert.ok(mounts.length > 0);
    for (const f of mounts) {
      const opts = (f[5] ?? '').split(',');
      assert.ok(opts.includes('nosuid') && opts.includes('nodev'), `${f[4]}: ${f[5]}`);
    }
  });
});
