/**
 * Attack: a real device node reaches the host through a layer. Overlay copy-up runs with the mounter's
 * credentials, so touching a device node of a lower layer (the default image's /dev/console, or /dev/kvm or
 * a loop device from an imported or pulled layer) put a real device node into the sandbox's upper on the
 * host, and an unprivileged host user opened /dev/console for writing and read and wrote the loop device
 * holding every sandbox's btrfs volume.
 * Precedent: the issue "Sandboxes that share nothing" (item 4, reproduced on this host); Docker and
 * containerd refuse device nodes from image layers under user namespaces; CVE-2023-0386 (overlayfs
 * copy-up of a file the mounter should not create).
 * Contained when: an imported image's layer holds no device node (whiteouts aside), nor does the default
 * image's, a sandbox of the imported image sees none, and a device node that reaches an upper anyway
 * cannot be opened through the sandbox's root (nodev).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { defaultImage, type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();

/** Device nodes under `dir` (a char device 0:0 is an overlay whiteout, not a device). */
function devices(dir: string): string[] {
  const out: string[] = [];
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, d.name);
    if (d.isDirectory()) out.push(...devices(p));
    else if (d.isBlockDevice() || (d.isCharacterDevice() && lstatSync(p).rdev !== 0)) out.push(p);
  }
  return out;
}

// A tar with what an image may carry: a console, a null device, a loop (block) device and KVM.
const MAKE_TAR = `
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for name, kind, major, minor in (("dev/console", tarfile.CHRTYPE, 5, 1), ("srv/null", tarfile.CHRTYPE, 1, 3),
                                     ("srv/loop0", tarfile.BLKTYPE, 7, 0), ("srv/kvm", tarfile.CHRTYPE, 10, 232)):
        i = tarfile.TarInfo(name); i.type = kind; i.devmajor = major; i.devminor = minor; i.mode = 0o666
        t.addfile(i)
    for d in ("bin", "dev", "srv", "tmp"):
        i = tarfile.TarInfo(d); i.type = tarfile.DIRTYPE; i.mode = 0o755; t.addfile(i)
    data = b"plain\\n"
    i = tarfile.TarInfo("srv/plain.txt"); i.size = len(data); i.mode = 0o644; t.addfile(i, io.BytesIO(data))
`;

describe('abuse: device nodes from image layers', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let work: string;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    work = mkdtempSync('/var/tmp/forkbox-tests/devices-');
  });
  after(async () => {
    await fx?.close();
    rmSync(work, { recursive: true, force: true });
  });

  it('an imported layer holds no device node, and neither does the default image', async () => {
    const tar = join(work, 'devices.tar');
    const made = spawnSync('python3', ['-c', MAKE_TAR, tar], { encoding: 'utf8' });
    assert.equal(made.status, 0, made.stderr);
    const img = await api.importImage('devices', tar);
    for (const layer of img.layers) assert.deepEqual(devices(layer), [], `imported layer ${layer}`);
    assert.equal(lstatSync(join(img.layers[0] ?? '', 'srv', 'plain.txt')).isFile(), true, 'the rest is kept');
    for (const layer of defaultImage().layers) assert.deepEqual(devices(layer), [], `default image ${layer}`);
  });

  it('a device node that reaches an upper cannot be opened through the sandbox root', async () => {
    const id = (await api.createSandbox({})).id;
    const upper = join(fx.stateDir, 'sandboxes', id, 'upper');
    const mk = spawnSync('mknod', ['-m', '666', join(upper, 'srv-null'), 'c', '1', '3']);
    assert.equal(mk.status, 0, String(mk.stderr));
    const r = await api.exec(id, {
      argv: [
        'python3',
        '-c',
        "import os\ntry:\n os.open('/srv-null', os.O_RDWR); print('opened')\nexcept OSError as e: print(e.errno)",
      ],
    });
    assert.equal(r.stdout.toString().trim(), '13', `a device on the sandbox root opened: ${r.stdout}`);
  });
});
