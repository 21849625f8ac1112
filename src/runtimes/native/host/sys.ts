/**
 * Host syscalls that Node does not expose, called through koffi (FFI into libc).
 *
 * Only a handful of calls, each wrapped so that a failure throws a `SysError` carrying `errno`, the symbolic
 * `code` ('EBUSY', 'ENOENT', …) and a message naming the call and its target. koffi saves errno right after
 * each foreign call, so `koffi.errno()` read immediately afterwards is the call's own errno.
 */
import type net from 'node:net';
import koffi from 'koffi';
import { umount2 } from '../../../util/fs-calls.ts';
import { bindLibc, SysError } from '../../../util/libc.ts';
import { EINTR, ENOSYS, EWOULDBLOCK } from './errno.ts';

/** mount(2) flags (linux/mount.h). */
export const MS = {
  RDONLY: 1,
  NOSUID: 2,
  NODEV: 4,
  NOEXEC: 8,
  SYNCHRONOUS: 16,
  REMOUNT: 32,
  MANDLOCK: 64,
  DIRSYNC: 128,
  NOSYMFOLLOW: 256,
  NOATIME: 1024,
  NODIRATIME: 2048,
  BIND: 4096,
  MOVE: 8192,
  REC: 16384,
  SILENT: 32768,
  UNBINDABLE: 1 << 17,
  PRIVATE: 1 << 18,
  SLAVE: 1 << 19,
  SHARED: 1 << 20,
  RELATIME: 1 << 21,
  STRICTATIME: 1 << 24,
  LAZYTIME: 1 << 25,
} as const;

/** umount2(2) flags. */
export const MNT_FORCE = 1;
/** Lazy unmount: detach now, clean up when no longer busy. */
export const MNT_DETACH = 2;
export const MNT_EXPIRE = 4;
export const UMOUNT_NOFOLLOW = 8;

export interface Sys {
  mount(
    source: string | null,
    target: string,
    fstype: string | null,
    flags: number,
    data: string | null,
  ): void;
  umount2(target: string, flags: number): void;
  /** Non-blocking exclusive flock; returns false when another process holds it. */
  tryLockExclusive(fd: number): boolean;
  /** SO_PEERCRED of a connected unix socket fd: pid/uid/gid as seen from this (host) pid namespace. */
  peerCred(fd: number): { pid: number; uid: number; gid: number };
  /** getrlimit(RLIMIT_NOFILE). */
  nofileLimit(): { soft: number; hard: number };
  /** Raise RLIMIT_NOFILE's soft limit to its hard limit; returns the limits now in force. */
  raiseNofileLimit(): { soft: number; hard: number };
  /**
   * Give this thread (the main thread: child processes are spawned from it) a new, anonymous, empty
   * session keyring: keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL). Processes started afterwards inherit it.
   */
  joinAnonymousSessionKeyring(): void;
}

export { errnoName, SysError } from '../../../util/libc.ts';

// sys/socket.h, sys/file.h (Linux, all architectures Node runs forkbox on).
const SOL_SOCKET = 1;
const SO_PEERCRED = 17;
const LOCK_EX = 2;
const LOCK_NB = 4;
const RLIMIT_NOFILE = 7;
const KEYCTL_JOIN_SESSION_KEYRING = 1;
/** keyctl(2)'s syscall number (libc has no wrapper; libkeyutils may not be installed). */
const SYS_KEYCTL: Partial<Record<string, number>> = { x64: 250, arm64: 219 };

const PROTOTYPES = {
  mount:
    'int mount(const char *source, const char *target, const char *fstype, unsigned long flags, const char *data)',
  flock: 'int flock(int fd, int op)',
  // optval/optlen and struct rlimit { rlim_t cur, max } (16 bytes: rlim_t is 64-bit on x86_64 and aarch64)
  // as raw Buffers.
  getsockopt: 'int getsockopt(int fd, int level, int name, void *optval, void *optlen)',
  getrlimit: 'int getrlimit(int resource, void *rlim)',
  setrlimit: 'int setrlimit(int resource, void *rlim)',
  syscall: 'long syscall(long number, ...)',
};

/** rlim_t as a JS number; RLIM_INFINITY (all ones) becomes Infinity. */
function rlimNumber(v: bigint): number {
  return v === 0xffffffffffffffffn ? Number.POSITIVE_INFINITY : Number(v);
}

export function createSys(): Sys {
  const c = bindLibc(PROTOTYPES);

  return {
    mount(source, target, fstype, flags, data) {
      if (c().mount(source, target, fstype, flags, data) !== 0) {
        const e = koffi.errno();
        throw new SysError(
          'mount',
          e,
          `${JSON.stringify(source)} -> ${JSON.stringify(target)}, type ${JSON.stringify(fstype)}, flags 0x${flags.toString(16)}${data === null ? '' : `, data ${JSON.stringify(data)}`}`,
        );
      }
    },

    umount2,

    tryLockExclusive(fd) {
      for (;;) {
        if (c().flock(fd, LOCK_EX | LOCK_NB) === 0) return true;
        const e = koffi.errno();
        if (e === EWOULDBLOCK) return false;
        if (e === EINTR) continue;
        throw new SysError('flock', e, `fd ${fd}, LOCK_EX|LOCK_NB`);
      }
    },

    peerCred(fd) {
      const cred = Buffer.alloc(12); // struct ucred { pid_t pid; uid_t uid; gid_t gid; }
      const len = Buffer.alloc(4);
      len.writeUInt32LE(cred.length);
      if (c().getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, len) !== 0) {
        const e = koffi.errno();
        throw new SysError('getsockopt', e, `fd ${fd}, SO_PEERCRED`);
      }
      // Little-endian is what every platform forkbox's native runtime targets (x86_64, aarch64) uses.
      return { pid: cred.readInt32LE(0), uid: cred.readUInt32LE(4), gid: cred.readUInt32LE(8) };
    },

    nofileLimit() {
      const buf = Buffer.alloc(16);
      if (c().getrlimit(RLIMIT_NOFILE, buf) !== 0) throw new SysError('getrlimit', koffi.errno(), 'NOFILE');
      return { soft: rlimNumber(buf.readBigUInt64LE(0)), hard: rlimNumber(buf.readBigUInt64LE(8)) };
    },

    raiseNofileLimit() {
      const buf = Buffer.alloc(16);
      if (c().getrlimit(RLIMIT_NOFILE, buf) !== 0) throw new SysError('getrlimit', koffi.errno(), 'NOFILE');
      const hard = buf.readBigUInt64LE(8);
      if (buf.readBigUInt64LE(0) !== hard) {
        buf.writeBigUInt64LE(hard, 0);
        if (c().setrlimit(RLIMIT_NOFILE, buf) !== 0)
          throw new SysError('setrlimit', koffi.errno(), `NOFILE soft = hard = ${hard}`);
      }
      return this.nofileLimit();
    },

    joinAnonymousSessionKeyring() {
      const nr = SYS_KEYCTL[process.arch];
      if (nr === undefined)
        throw new SysError('keyctl', ENOSYS, `no syscall number known for ${process.arch}`);
      const r = c().syscall(nr, 'int', KEYCTL_JOIN_SESSION_KEYRING, 'void *', null);
      if (r < 0) throw new SysError('keyctl', koffi.errno(), 'KEYCTL_JOIN_SESSION_KEYRING, NULL');
    },
  };
}

/**
 * The OS file descriptor behind a connected `net.Socket` (e.g. a unix socket accepted by a `net.Server`).
 * Relies on libuv's pipe/TCP handle exposing `fd` (stable across Node versions on Unix; it is -1 on Windows
 * and absent once the socket is destroyed).
 */
export function socketFd(socket: net.Socket): number {
  const handle = (socket as unknown as { _handle?: { fd?: unknown } | null })._handle;
  const fd = handle?.fd;
  if (typeof fd !== 'number' || fd < 0) {
    throw new Error(
      `cannot get the file descriptor of this socket (${handle ? `handle fd is ${String(fd)}` : 'socket has no handle: it was destroyed or never connected'}); call socketFd() on a connected socket, before it closes`,
    );
  }
  return fd;
}
