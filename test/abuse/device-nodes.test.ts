/**
 * Attack: device nodes — mknod the block device of the host's root disk (its major:minor read on the
 * host), /dev/mem, /dev/kmsg and /dev/port inside the sandbox and open them; on a tmpfs mounted for it
 * (refused: nothing in a sandbox holds CAP_SYS_ADMIN) and by mounting devtmpfs.
 * Precedent: sandbox-runtime "should prevent creation of special file types" (peers 6b #15); the
 * classic container escape of mknod + mount of the host disk (why Docker drops CAP_MKNOD's effect with
 * a device cgroup).
 * Contained when: no device node can be created (mknod of a device is refused in a user namespace) and
 * none is ever opened and read; devtmpfs cannot be mounted.
 */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { bothPython } from '../helpers/attacks.ts';
import { nativeUnavailable, withOneSandbox } from '../helpers/native.ts';

const skip = nativeUnavailable();

/** Linux's dev_t encoding (new_decode_dev). */
function majorMinor(dev: number): [number, number] {
  return [(dev & 0xfff00) >>> 8, (dev & 0xff) | ((dev >>> 12) & 0xfff00)];
}

const SCRIPT = `
import ctypes, errno, json, os, stat, sys
nodes = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
def en(e):
    return errno.errorcode.get(e, str(e))
res = {}
dirs = ["/tmp"]
os.makedirs("/tmp/devfs", exist_ok=True)
if libc.mount(b"none", b"/tmp/devfs", b"tmpfs", 0, None) == 0:
    dirs.append("/tmp/devfs")  # neither a command nor the REPL may mount: tried on it only if it could
for d in dirs:
    for name, kind, major, minor in nodes:
        path = "%s/%s" % (d, name)
        mode = (stat.S_IFBLK if kind == "b" else stat.S_IFCHR) | 0o600
        try:
            os.mknod(path, mode, os.makedev(major, minor))
        except OSError as e:
            res["mknod " + path] = en(e.errno)
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            try:
                res["mknod " + path] = "READ %d bytes" % len(os.read(fd, 16))
            finally:
                os.close(fd)
        except OSError as e:
            res["mknod " + path] = "made, open " + en(e.errno)
ctypes.set_errno(0)
os.makedirs("/tmp/devtmp", exist_ok=True)
res["mount devtmpfs"] = "MOUNTED" if libc.mount(b"none", b"/tmp/devtmp", b"devtmpfs", 0, None) == 0 else en(ctypes.get_errno())
res["dirs"] = dirs
print(json.dumps(res))
`;

describe('abuse: device nodes', { skip: skip ?? false }, () => {
  let api: ForkboxApi;
  let id: string;
  withOneSandbox((s) => {
    ({ api, id } = s);
  });

  it('cannot create or open the host disk, /dev/mem, /dev/kmsg or /dev/port, from an exec or the REPL', async () => {
    const [major, minor] = majorMinor(statSync('/').dev);
    assert.ok(major > 0, `the host root is on a block device (${major}:${minor})`);
    const nodes = [
      ['host-disk', 'b', major, minor],
      ['mem', 'c', 1, 1],
      ['kmsg', 'c', 1, 11],
      ['port', 'c', 1, 4],
    ];
    const r = await bothPython<Record<string, string | string[]>>(api, id, SCRIPT, [JSON.stringify(nodes)]);
    assert.deepEqual(r.repl.dirs, ['/tmp'], 'the REPL cannot mount a tmpfs of its own either');
    for (const [where, res] of Object.entries(r)) {
      for (const [what, outcome] of Object.entries(res)) {
        if (what === 'dirs') continue;
        if (what === 'mount devtmpfs') assert.match(String(outcome), /^(EPERM|EACCES)$/, `${where}: ${what}`);
        else assert.match(String(outcome), /^(EPERM|EACCES|made, open (EPERM|EACCES))$/, `${where}: ${what}`);
      }
      assert.equal(
        Object.keys(res).length,
        nodes.length * (res.dirs?.length ?? 0) + 2,
        `${where}: all tried`,
      );
    }
  });
});
