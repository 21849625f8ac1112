/**
 * The user-mode NAT of `open` sandboxes: one slirp4netns per sandbox, attached to the network namespace of
 * its PID 1, giving it a `tap0` (10.0.2.100/24, default route via 10.0.2.2) whose connections slirp makes
 * as ordinary sockets in the host's network namespace — judged there by the host filter (open-filter.ts),
 * which matches the sandboxes' uid range: slirp runs as the sandboxes' root host uid.
 *
 * How it starts (docs/ARCHITECTURE.md, "Network egress"; each step checked on this host):
 * - `setpriv` to the range's first uid, no groups, and as inheritable + ambient capabilities only what
 *   attaching takes: `sys_ptrace` (opening `/proc/<pid>/ns/*` of a process in a user namespace that uid
 *   does not own is a ptrace-mode access), `sys_admin` (setns), `net_admin` (the tap and its address,
 *   route and MTU) and `dac_override` (`/dev/net/tun` is 0600 here). The bounding set is cut to those.
 * - slirp4netns in PID mode. Its short-lived child attaches to the netns and opens the tap with those
 *   capabilities; `--userns-path=/proc/self/ns/user` keeps that child in the host's user namespace (joining
 *   its own user namespace fails and slirp goes on without it), since in the sandbox's it would lose them.
 * - `--enable-sandbox`: the long-lived parent joins the sandbox's user namespace (losing every host
 *   capability), makes its own mount namespace with only what it needs, drops every capability but
 *   CAP_NET_BIND_SERVICE (in that user namespace: CapEff 0x400) and `--enable-seccomp` filters its syscalls.
 * - `--disable-host-loopback` (10.0.2.2 is not the host's 127.0.0.1), `--configure`, `--mtu=65520`,
 *   `--ready-fd` (resolves the start), `--exit-fd` (a pipe from the daemon: slirp exits when the daemon
 *   closes it or dies; recovery starts a new one).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { ForkboxError } from '../domain/errors.ts';
import type { Logger } from '../domain/logger.ts';
import { which } from '../util/subprocess.ts';

/** Capabilities slirp4netns's set-up needs in the host's user namespace (see above). */
export const NAT_CAPS = ['sys_admin', 'net_admin', 'dac_override', 'sys_ptrace'] as const;
/** How long a NAT may take to attach and configure the tap. */
const START_MS = 10_000;
/** How long a stopped NAT may take to exit before it is killed. */
const STOP_MS = 2_000;
const STDERR_KEEP = 2048;

/** The argv (setpriv first) that attaches a NAT running as host `uid` to the netns of host `pid`. */
export function natArgv(setpriv: string, slirp: string, uid: number, pid: number): string[] {
  const caps = NAT_CAPS.map((c) => `+${c}`).join(',');
  return [
    setpriv,
    '--reuid',
    String(uid),
    '--regid',
    String(uid),
    '--clear-groups',
    '--bounding-set',
    `-all,${caps},+net_bind_service`,
    '--inh-caps',
    `-all,${caps}`,
    '--ambient-caps',
    `-all,${caps}`,
    '--',
    slirp,
    '--enable-sandbox',
    '--enable-seccomp',
    '--disable-host-loopback',
    '--configure',
    '--mtu=65520',
    '--ready-fd=3',
    '--exit-fd=4',
    '--userns-path=/proc/self/ns/user',
    String(pid),
    'tap0',
  ];
}

export interface OpenNats {
  /**
   * Attach sandbox `id`'s NAT to the netns of its PID 1 (host `pid`), run as host `uid` (the sandbox's
   * root; default: the uid given at creation); resolves once its tap is up.
   */
  start(id: string, pid: number, uid?: number): Promise<void>;
  /** Stop sandbox `id`'s NAT and wait for it to exit (none: nothing to do). */
  stop(id: string): Promise<void>;
  stopAll(): Promise<void>;
  /** The host pid of sandbox `id`'s NAT, if one runs. */
  pidOf(id: string): number | undefined;
  /** Why NATs may not start (undefined: they may): set by the daemon once the host filter is verified. */
  setMissing(why: string | undefined): void;
}

interface Nat {
  proc: ChildProcess;
  exited: Promise<void>;
}

function waitExit(proc: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) resolve();
    else proc.once('exit', () => resolve());
  });
}

export function createOpenNats(opts: { uid: number; log: Pick<Logger, 'info' | 'warn'> }): OpenNats {
  const nats = new Map<string, Nat>();
  let missing: string | undefined = 'the host filter is not verified yet';

  async function stop(id: string): Promise<void> {
    const nat = nats.get(id);
    if (!nat) return;
    nats.delete(id);
    (nat.proc.stdio[4] as Readable | null)?.destroy(); // the exit fd: slirp exits on its hang-up
    const timer = setTimeout(() => nat.proc.kill('SIGKILL'), STOP_MS);
    await nat.exited;
    clearTimeout(timer);
  }

  /** `uid`: the sandbox's root host uid (its block's first), which the NAT runs as; default `opts.uid`. */
  async function start(id: string, pid: number, uid = opts.uid): Promise<void> {
    if (missing !== undefined)
      throw new ForkboxError(
        'permission_denied',
        `this daemon cannot give sandboxes open egress: ${missing}. Create the sandbox with an allow list instead.`,
        { field: 'network' },
      );
    const setpriv = which('setpriv');
    const slirp = which('slirp4netns');
    if (!setpriv || !slirp)
      throw new ForkboxError(
        'requirement_missing',
        `'${setpriv ? 'slirp4netns' : 'setpriv'}' is not installed: install it (apt-get install ${setpriv ? 'slirp4netns' : 'util-linux'}) and restart the daemon.`,
      );
    await stop(id);
    const [cmd = setpriv, ...args] = natArgv(setpriv, slirp, uid, pid);
    const proc = spawn(cmd, args, {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
    });
    const nat: Nat = { proc, exited: waitExit(proc) };
    nats.set(id, nat);
    let stderr = '';
    proc.stderr?.on('data', (b: Buffer) => {
      if (stderr.length < STDERR_KEEP) stderr += b.toString().slice(0, STDERR_KEEP - stderr.length);
    });
    proc.on('error', () => undefined); // a spawn failure shows as its exit below
    const ready = proc.stdio[3] as Readable | null;
    const ok = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), START_MS);
      ready?.on('data', (b: Buffer) => {
        if (b.toString().includes('1')) {
          clearTimeout(timer);
          resolve(true);
        }
      });
      void nat.exited.then(() => {
        clearTimeout(timer);
        resolve(false);
      });
    });
    if (!ok) {
      await stop(id);
      throw new ForkboxError(
        'unavailable',
        `the user-mode NAT of sandbox ${id} did not start: ${stderr.trim().split('\n').slice(-3).join('; ').slice(0, 300) || 'no output'}. Kill the sandbox and create it again; if this persists, check that slirp4netns runs on this host.`,
      );
    }
    void nat.exited.then(() => {
      if (nats.get(id) === nat) {
        nats.delete(id);
        opts.log.warn(
          { sandbox: id, stderr: stderr.slice(-300) },
          'the user-mode NAT of an open sandbox exited',
        );
      }
    });
  }

  return {
    start,
    stop,
    async stopAll() {
      await Promise.all([...nats.keys()].map((id) => stop(id)));
    },
    pidOf: (id) => nats.get(id)?.proc.pid,
    setMissing(why) {
      missing = why;
    },
  };
}
