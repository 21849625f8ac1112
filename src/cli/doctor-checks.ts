/** `forkbox doctor`: every requirement of the native runtime, checked for real, each with its fix. */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createImageStore } from '../images/index.ts';
import { detectCgroups } from '../runtimes/native/cgroups/index.ts';
import { hasCapSysResource, isAlive } from '../runtimes/native/host/proc.ts';
import { traverseAdvice, untraversable } from '../runtimes/native/host/traverse.ts';
import { DEFAULT_UID_SPACE } from '../runtimes/native/host/uid-ranges.ts';
import { planStorage } from '../runtimes/native/layers/btrfs-storage.ts';
import { configuredElsewhere, readServeRecord } from '../transports/serve-record.ts';
import { runSync, which } from '../util/subprocess.ts';

export interface DoctorCheck {
  name: string;
  ok: boolean;
  required: boolean;
  detail: string;
  fix?: string;
}

const APT = 'sudo apt-get install -y';

function check(
  name: string,
  required: boolean,
  fn: () => { ok: boolean; detail: string; fix?: string },
): DoctorCheck {
  try {
    const r = fn();
    return {
      name,
      required,
      ok: r.ok,
      detail: r.detail,
      ...(r.ok || r.fix === undefined ? {} : { fix: r.fix }),
    };
  } catch (e) {
    return { name, required, ok: false, detail: e instanceof Error ? e.message : String(e) };
  }
}

function binary(name: string, bin: string, pkg: string, required: boolean, why: string): DoctorCheck {
  return check(name, required, () => {
    const p = which(bin);
    return p
      ? { ok: true, detail: p }
      : { ok: false, detail: `${bin} not found (${why})`, fix: `${APT} ${pkg}` };
  });
}

/** The gvisor runtime's runsc: present, and a release with the checkpoint/restore forks rely on. */
function runscCheck(): DoctorCheck {
  return check('runsc (the gvisor runtime)', false, () => {
    const fix =
      "run `npm run setup` as root (it installs runsc from Debian's backports, pinned), or on Debian: add the backports suite and `apt-get install -t bookworm-backports runsc`";
    const bin = process.env.FORKBOX_RUNSC ?? which('runsc');
    if (!bin)
      return { ok: false, detail: 'runsc not found: sandboxes with runtime gvisor cannot be made', fix };
    const version = runSync(bin, ['--version']).split('\n')[0] ?? '';
    const release = /(\d{8})/.exec(version)?.[1] ?? '0';
    const ok = release >= '20240729';
    return {
      ok,
      detail: `${bin}: ${version.trim()}${ok ? '' : ' (older than the 2024-07-29 release the gvisor runtime is tested with)'}`,
      fix,
    };
  });
}

export async function runDoctorChecks(opts: { stateDir: string; image?: string }): Promise<DoctorCheck[]> {
  const out: DoctorCheck[] = [];
  out.push(
    check('linux kernel >= 5.11', true, () => {
      const rel = readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim();
      const [maj = 0, min = 0] = rel.split('.').map((x) => Number.parseInt(x, 10));
      const ok = maj > 5 || (maj === 5 && min >= 11);
      return { ok, detail: rel, fix: 'upgrade the kernel to 5.11 or newer (overlayfs in user namespaces)' };
    }),
  );
  out.push(
    check('running as root', true, () => ({
      ok: process.getuid?.() === 0,
      detail: `uid ${process.getuid?.()}`,
      fix: 'run forkbox as root (sudo); a rootless mode is planned',
    })),
  );
  out.push(
    check('user namespaces enabled', true, () => {
      const n = Number(readFileSync('/proc/sys/user/max_user_namespaces', 'utf8').trim());
      return {
        ok: n > 0,
        detail: `max_user_namespaces = ${n}`,
        fix: 'sudo sysctl -w user.max_user_namespaces=15000',
      };
    }),
  );
  out.push(
    check('user namespaces without privilege', true, () => {
      // Every sandbox is cloned into a user namespace of its own by a process holding no capability in the
      // host's: Debian's kernel.unprivileged_userns_clone=0, or Ubuntu's AppArmor restriction, refuses that.
      const r = spawnSync(
        'setpriv',
        [
          '--reuid=65534',
          '--regid=65534',
          '--clear-groups',
          '--',
          'unshare',
          '--user',
          '--map-root-user',
          'true',
        ],
        { encoding: 'utf8', timeout: 10000 },
      );
      return {
        ok: r.status === 0,
        detail:
          r.status === 0
            ? 'an unprivileged process may make one'
            : (r.stderr || r.error?.message || 'refused').trim(),
        fix: 'sudo sysctl -w kernel.unprivileged_userns_clone=1 (Debian); on Ubuntu 23.10+: sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0',
      };
    }),
  );
  out.push(
    check('overlayfs in a user namespace', true, () => {
      const dir = mkdtempSync(join(tmpdir(), 'forkbox-doctor-'));
      try {
        for (const d of ['l', 'u', 'w', 'm']) mkdirSync(join(dir, d));
        const r = spawnSync(
          'unshare',
          [
            '--user',
            '--map-root-user',
            '--mount',
            'mount',
            '-t',
            'overlay',
            'overlay',
            '-o',
            `lowerdir=${dir}/l,upperdir=${dir}/u,workdir=${dir}/w`,
            `${dir}/m`,
          ],
          { encoding: 'utf8', timeout: 10000 },
        );
        return {
          ok: r.status === 0,
          detail: r.status === 0 ? 'works' : (r.stderr || r.error?.message || 'failed').trim(),
          fix: 'needs Linux >= 5.11 with overlay and user namespaces (util-linux provides unshare)',
        };
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }),
  );
  out.push(
    check('cgroup controllers', true, () => {
      const cg = detectCgroups();
      return { ok: true, detail: `cgroup ${cg.kind}` };
    }),
  );
  out.push(
    check('CAP_SYS_RESOURCE (OOM protection for agents)', false, () => ({
      ok: hasCapSysResource(),
      detail: hasCapSysResource()
        ? 'held'
        : 'not held: agents keep oom_score_adj 0, so an OOM may pick an agent over user code',
      fix: 'run forkbox with full root capabilities (not inside a container that drops CAP_SYS_RESOURCE)',
    })),
  );
  out.push(binary('runc', process.env.FORKBOX_RUNC ?? 'runc', 'runc', true, 'runs the template containers'));
  out.push(runscCheck());
  out.push(binary('debootstrap', 'debootstrap', 'debootstrap', false, 'builds Debian images'));
  out.push(
    binary('btrfs-progs', 'mkfs.btrfs', 'btrfs-progs', false, 'the btrfs storage driver for O(1) snapshots'),
  );
  out.push(
    check('storage driver', false, () => {
      // What the engine would pick now (FORKBOX_STORAGE=btrfs|copy|auto), with the reason.
      const plan = planStorage(opts.stateDir);
      return {
        ok: plan.available && (plan.driver === 'btrfs' || plan.mode === 'copy'),
        detail: `${plan.driver} (FORKBOX_STORAGE=${plan.mode}): ${plan.reason}`,
        fix:
          plan.mode === 'btrfs'
            ? 'fix what the detail names, or set FORKBOX_STORAGE=copy'
            : `${APT} btrfs-progs (and a kernel with btrfs and loop devices) for O(1) fork snapshots; copy works everywhere, slower for big uppers`,
      };
    }),
  );
  out.push(
    binary(
      'slirp4netns',
      'slirp4netns',
      'slirp4netns',
      false,
      'network egress for sandboxes that ask for it',
    ),
  );
  out.push(
    check('state dir writable', true, () => {
      mkdirSync(opts.stateDir, { recursive: true, mode: 0o711 });
      accessSync(opts.stateDir, constants.W_OK);
      return { ok: true, detail: opts.stateDir };
    }),
  );
  out.push(
    check('who serves the state dir', false, () => {
      // Informational: which daemon the CLI talks to, and whether the CLI may start one itself.
      const rec = readServeRecord(opts.stateDir);
      const elsewhere = configuredElsewhere(opts.stateDir);
      if (!rec) return { ok: true, detail: 'no daemon has served it yet: the CLI starts one on demand' };
      const how = rec.configured
        ? `configured: 'forkbox serve ${rec.how.join(' ').slice(0, 200)}'; the CLI never starts one in its place`
        : 'started on demand (or plain `forkbox serve`): the CLI starts one again when none answers';
      return {
        ok: true,
        detail: `pid ${rec.pid}${isAlive(rec.pid) ? '' : ' (not running)'}, started ${rec.startedAt}, ${how}${elsewhere && !rec.configured ? `; ${elsewhere}` : ''}`,
      };
    }),
  );
  out.push(
    check('sandboxes can reach the state dir', true, () => {
      // runc starts templates as their root (an unprivileged host uid of forkbox's uid space) on a root
      // under the state dir: a parent it cannot search (e.g. a 0700 home directory) fails the first create.
      const uid = DEFAULT_UID_SPACE.start;
      const b = untraversable(opts.stateDir, uid, uid);
      return b
        ? {
            ok: false,
            detail: traverseAdvice(b, opts.stateDir, uid),
            fix: `chmod o+x ${b.dir}`,
          }
        : { ok: true, detail: `host uid ${uid} can search every directory down to ${opts.stateDir}` };
    }),
  );
  const imageName = opts.image ?? 'debian';
  out.push(
    check(`python3 in the default image '${imageName}'`, true, () => {
      const img = createImageStore({ stateDir: opts.stateDir }).get(imageName);
      if (!img)
        return {
          ok: false,
          detail: 'image not built',
          fix: 'forkbox images build debian   (or: npm run setup)',
        };
      return img.python
        ? { ok: true, detail: img.python }
        : {
            ok: false,
            detail: 'the image has no python3',
            fix: 'forkbox images build debian --packages python3',
          };
    }),
  );
  return out;
}
