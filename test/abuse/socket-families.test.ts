/**
 * Attack: open sockets of address families a sandbox does not need. AF_VSOCK reaches the host's
 * hypervisor sockets and is not per sandbox (no network namespace covers it); AF_PACKET, AF_ALG, AF_KEY,
 * AF_TIPC, AF_RDS, AF_CAN, AF_BLUETOOTH, AF_XDP… have each been the way in of a local kernel exploit
 * (CVE-2017-7308 AF_PACKET, CVE-2021-3715 tc/route via netlink, CVE-2019-8912 AF_ALG, CVE-2021-26708
 * AF_VSOCK, CVE-2018-5703 via AF_RDS). Precedent: issue #11 item 9 — `socket(AF_VSOCK, …)` succeeded
 * inside a sandbox.
 *
 * Contained when: socket(2) fails with ENOSYS (the profile's answer to every call a sandbox may not make)
 * for every family but AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK, also with the family's high bits set;
 * netfilter over netlink fails with EAFNOSUPPORT; the profile has no socketcall(2), the 32-bit
 * multiplexer whose arguments seccomp cannot see.
 *
 * How the test cannot pass by accident: each call asks for socket type 99, which does not exist. Without
 * the filter the kernel checks the family's range, then the type, and fails with EINVAL before it looks
 * for the family's module — for every family below AF_MAX, loaded or not. Only the seccomp filter answers
 * ENOSYS (or EAFNOSUPPORT) first. The allowed families get EINVAL, which shows the filter lets them through.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type AbuseDaemon, startDaemon } from '../helpers/abuse.ts';
import { nativeUnavailable } from '../helpers/native.ts';

const why = nativeUnavailable();

/** Families refused (number → name), a choice covering the ones with exploit history and AF_VSOCK. */
const DENIED: Record<string, number> = {
  AF_UNSPEC: 0,
  AF_AX25: 3,
  AF_IPX: 4,
  AF_APPLETALK: 5,
  AF_X25: 9,
  AF_DECnet: 12,
  AF_KEY: 15,
  AF_PACKET: 17,
  AF_RDS: 21,
  AF_PPPOX: 24,
  AF_LLC: 26,
  AF_CAN: 29,
  AF_TIPC: 30,
  AF_BLUETOOTH: 31,
  AF_ALG: 38,
  AF_VSOCK: 40,
  AF_QIPCRTR: 42,
  AF_SMC: 43,
  AF_XDP: 44,
  AF_MCTP: 45,
};
const ALLOWED: Record<string, number> = { AF_UNIX: 1, AF_INET: 2, AF_INET6: 10, AF_NETLINK: 16 };
const SYS_SOCKET_X86_64 = 41;

/** Python printing the errno name of socket(family, 99, protocol) made with a raw 64-bit syscall. */
const probe = (family: bigint, protocol = 0) =>
  [
    'import ctypes, errno',
    'libc = ctypes.CDLL(None, use_errno=True)',
    'libc.syscall.restype = ctypes.c_long',
    `r = libc.syscall(ctypes.c_long(${SYS_SOCKET_X86_64}), ctypes.c_long(${family}), ctypes.c_long(99), ctypes.c_long(${protocol}))`,
    'print("ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])',
  ].join('\n');

describe('abuse: socket address families', () => {
  let d: AbuseDaemon;
  let id: string;

  before(async () => {
    if (why) throw new Error(`this abuse test needs the native runtime: ${why}`);
    if (process.arch !== 'x64') throw new Error(`this test issues x86_64 syscalls; this is ${process.arch}`);
    d = await startDaemon();
    id = (await d.api.createSandbox({})).id;
  });
  after(async () => {
    await d?.stop();
  });

  async function errnoOf(family: bigint, protocol = 0): Promise<string> {
    const r = await d.api.exec(id, { argv: ['python3', '-c', probe(family, protocol)] });
    assert.equal(r.exitCode, 0, JSON.stringify(r));
    return r.stdout.trim();
  }

  for (const [name, family] of Object.entries(DENIED)) {
    it(`refuses ${name} (${family})`, async () => {
      assert.equal(await errnoOf(BigInt(family)), 'ENOSYS');
    });
  }

  it('refuses AF_VSOCK with its high bits set (seccomp sees 64 bits, the kernel 32)', async () => {
    assert.equal(await errnoOf((1n << 32n) + 40n), 'ENOSYS');
    assert.equal(await errnoOf((1n << 32n) + 1n), 'ENOSYS');
  });

  it('refuses netfilter over netlink', async () => {
    assert.equal(await errnoOf(16n, 12), 'EAFNOSUPPORT');
  });

  it('refuses a real AF_VSOCK stream socket from Python', async () => {
    const r = await d.api.exec(id, {
      argv: [
        'python3',
        '-c',
        'import socket, errno\ntry:\n    socket.socket(40, socket.SOCK_STREAM)\n    print("ok")\nexcept OSError as e:\n    print(errno.errorcode[e.errno])',
      ],
    });
    assert.equal(r.stdout.trim(), 'ENOSYS');
  });

  it('has no socketcall(2), the 32-bit multiplexer whose arguments seccomp cannot see', async () => {
    // x86_64 has no socketcall; only a 32-bit program could call it (int 0x80, out of Python's reach):
    // check the profile runc is given.
    const { seccompProfile } = await import('../../src/runtimes/native/container/seccomp.ts');
    const names = (seccompProfile().syscalls as { names: string[] }[]).flatMap((r) => r.names);
    assert.equal(names.includes('socketcall'), false);
  });

  for (const [name, family] of Object.entries(ALLOWED)) {
    it(`lets ${name} (${family}) through to the kernel`, async () => {
      assert.equal(await errnoOf(BigInt(family)), 'EINVAL');
    });
  }

  it('still makes ordinary sockets', async () => {
    const r = await d.api.exec(id, {
      argv: [
        'python3',
        '-c',
        'import socket\nfor f in (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6): socket.socket(f).close()\nsocket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()\nprint("fine")',
      ],
    });
    assert.equal(r.stdout, 'fine\n', JSON.stringify(r));
  });
});
