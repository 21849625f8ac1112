/**
 * The OCI runtime config (config.json) of a template container. runc runs it detached; its PID 1 is
 * the forkbox agent, and every sandbox of the template is forked from the agent's REPL worker.
 * Each security-relevant setting says what breaks without it.
 */
import { agentBoundsEnv } from '../../../domain/limits.ts';
import type { UidRange } from '../host/uid-range.ts';
import { RUNTIME_MOUNT } from './agent-runtime.ts';
import { seccompProfile } from './seccomp.ts';

export interface TemplateSpecInput {
  templateId: string;
  /** Host directory holding the agent's code (bind-mounted read-only at /.forkbox/bin). */
  agentDir: string;
  /** Host inbox directory of the template (must already be a shared self-bind mount). */
  inboxDir: string;
  /** PID 1's argv: the agent on the image's python3, or on the runtime's (agent-runtime.ts). */
  agentArgs: string[];
  /** The default image's layer, mounted read-only at /.forkbox/runtime when the image has no python3. */
  runtimeDir: string | null;
  env: Record<string, string>;
  /** A pulled image's config: the default working directory and user of commands. */
  execDefaults?: { cwd: string | null; user: string | null };
  uidRange: UidRange;
  /** A user namespace to join (its maps must be `uidRange`); default: runc makes one. */
  userns?: string;
  cgroupsPath: string;
  prewarm: string[];
}

// Capabilities inside the template's user namespace, which holds the template alone: every sandbox is
// cloned into a user namespace of its own (with a full set there for its set-up, dropped before anything of
// the sandbox runs: agent/forking.py), so the template needs no CAP_SYS_ADMIN, CAP_NET_ADMIN or
// CAP_SYS_CHROOT. CAP_SETUID/CAP_SETGID: its REPL worker writes each new sandbox's id maps. CAP_SETPCAP:
// the agent's bounding-set drop. Never ambient: an ambient cap would survive exec into unprivileged programs.
const CAPS = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FOWNER',
  'CAP_FSETID',
  'CAP_KILL',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETPCAP',
  'CAP_SETFCAP',
  'CAP_NET_BIND_SERVICE',
  'CAP_NET_RAW',
  'CAP_MKNOD',
  'CAP_AUDIT_WRITE',
];

/**
 * The environment of an agent that is PID 1 (a template's, or a gvisor sandbox's): the image's, then what
 * the agent reads once and never passes on to commands (agent.py's INTERNAL_ENV, execs.py).
 */
export function agentEnv(input: {
  env: Record<string, string>;
  role: 'template' | 'sandbox';
  id: string;
  execDefaults?: { cwd: string | null; user: string | null } | undefined;
  extra?: Record<string, string>;
}): string[] {
  const env = {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: '/root',
    LANG: 'C.UTF-8',
    ...input.env,
    FORKBOX_ROLE: input.role,
    FORKBOX_SANDBOX_ID: input.id,
    FORKBOX_CTL_SOCKET: '/.forkbox/inbox/ctl.sock',
    ...input.extra,
    // The bounds the agent enforces (src/agent/bounds.py): the host's own, never numbers of the agent's.
    FORKBOX_BOUNDS: agentBoundsEnv(),
    ...(input.execDefaults?.cwd ? { FORKBOX_EXEC_CWD: input.execDefaults.cwd } : {}),
    ...(input.execDefaults?.user ? { FORKBOX_EXEC_USER: input.execDefaults.user } : {}),
  };
  return Object.entries(env).map(([k, v]) => `${k}=${v}`);
}

export function templateOciSpec(input: TemplateSpecInput): Record<string, unknown> {
  const env = agentEnv({
    env: input.env,
    role: 'template',
    id: input.templateId,
    execDefaults: input.execDefaults,
    extra: { FORKBOX_PREWARM: input.prewarm.join(',') },
  });
  const idMap = [{ containerID: 0, hostID: input.uidRange.hostStart, size: input.uidRange.size }];
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid: 0, gid: 0 },
      args: input.agentArgs,
      env,
      cwd: '/',
      capabilities: { bounding: CAPS, effective: CAPS, permitted: CAPS, inheritable: [], ambient: [] },
      // No rlimits: runc sets them from the host with prlimit(2), which a host root without
      // CAP_SYS_RESOURCE (some hosts withhold it) may do only in a user namespace root owns, and the
      // template's is owned by its range's first uid. The agent sets RLIMIT_CORE to 0 itself (agent.py);
      // the rest are inherited from the daemon.
      // no_new_privs: setuid binaries in the image cannot raise privileges, and seccomp can be applied
      // without CAP_SYS_ADMIN in the init namespace.
      noNewPrivileges: true,
      // No oomScoreAdj here: runc would write it from inside the user namespace, where lowering it is
      // refused. The host sets -1000 on the template's PID 1 right after start (templates.ts).
    },
    root: { path: 'rootfs', readonly: false },
    hostname: 'forkbox-template',
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
      {
        destination: '/dev',
        type: 'tmpfs',
        source: 'tmpfs',
        options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'],
      },
      {
        destination: '/dev/pts',
        type: 'devpts',
        source: 'devpts',
        options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620', 'gid=5'],
      },
      {
        destination: '/dev/shm',
        type: 'tmpfs',
        source: 'shm',
        options: ['nosuid', 'noexec', 'nodev', 'mode=1777', 'size=65536k'],
      },
      {
        destination: '/dev/mqueue',
        type: 'mqueue',
        source: 'mqueue',
        options: ['nosuid', 'noexec', 'nodev'],
      },
      { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
      // The agent's code, read-only: a sandbox cannot change the code that serves it.
      {
        destination: '/.forkbox/bin',
        type: 'bind',
        source: input.agentDir,
        options: ['rbind', 'ro', 'nosuid', 'nodev'],
      },
      // The agent's Python for an image without one: read-only, so no sandbox can change it; no
      // setuid or devices from it. Executable, since the loader maps python3 and its libraries.
      ...(input.runtimeDir
        ? [
            {
              destination: RUNTIME_MOUNT,
              type: 'bind',
              source: input.runtimeDir,
              options: ['rbind', 'ro', 'nosuid', 'nodev'],
            },
          ]
        : []),
      // The inbox: rslave so that mounts the host makes under it (children's roots and inboxes) appear
      // inside, while nothing mounted inside propagates back to the host.
      {
        destination: '/.forkbox/inbox',
        type: 'bind',
        source: input.inboxDir,
        options: ['rbind', 'rslave', 'nosuid', 'nodev'],
      },
    ],
    linux: {
      uidMappings: idMap,
      gidMappings: idMap,
      // user: sandbox root is an unprivileged host uid. pid/mount/ipc/uts: private views. network: a
      // fresh namespace with only loopback (no route to the host or the internet).
      namespaces: [
        { type: 'pid' },
        { type: 'network' },
        { type: 'ipc' },
        { type: 'uts' },
        { type: 'mount' },
        input.userns ? { type: 'user', path: input.userns } : { type: 'user' },
      ],
      cgroupsPath: input.cgroupsPath,
      resources: {
        devices: [{ allow: false, access: 'rwm' }],
        // The template itself holds only the agent and an idle worker.
        pids: { limit: 256 },
      },
      // No maskedPaths and no readonlyPaths: the kernel refuses a new proc mount in a user namespace
      // unless a fully visible proc is already mounted (mnt_already_visible), and forking mounts one.
      // The user namespace already denies what masking would (kcore, sysrq-trigger, timer_list belong
      // to the unmapped host uid 0).
      maskedPaths: [],
      readonlyPaths: [],
      seccomp: seccompProfile(),
    },
  };
}
