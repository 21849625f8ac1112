/**
 * Attack: the 32-bit system call ABIs. An ordinary 64-bit program can enter the i386 table with `int $0x80`
 * (and, where the kernel has it, the x32 table with __X32_SYSCALL_BIT), where `socketcall(2)` multiplexes
 * socket(2) behind a pointer seccomp cannot read: the socket-family filter let an exec open AF_VSOCK (this
 * host is a Firecracker guest: vsock reaches the hypervisor side), AF_PACKET and NETLINK_NETFILTER sockets.
 * Precedent: the issue "Sandboxes that share nothing" (item 8, reproduced on this host); Docker's default
 * profile lists the compat architectures and their own socket rules; CVE-2009-0835 (seccomp mode 1 and
 * 32-bit syscalls from 64-bit processes).
 * Contained when: from a command and from the REPL, every socket family the profile refuses stays refused
 * through all three entry points (x86_64 `syscall`, i386 `int $0x80` socketcall and socket, x32): no call
 * returns a descriptor (each is refused, or the thread is killed by the filter).
 */
import assert from 'node:assert/strict';
import { arch } from 'node:os';
import { describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { bothPython } from '../helpers/attacks.ts';
import { nativeUnavailable, withOneSandbox } from '../helpers/native.ts';

const skip = nativeUnavailable() ?? (arch() === 'x64' ? null : 'the i386 and x32 ABIs exist on x86_64 only');

// Each probe runs in a forked child: a filter that kills on a foreign ABI must not take the probe with it.
const SCRIPT = `
import ctypes, json, mmap, os, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
MAP_32BIT = 0x40
page = libc.mmap(None, 4096, 7, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_32BIT, -1, 0)
assert page and page < 2**32, "no executable page below 4 GiB"
ARGS = page + 2048  # socketcall's argument block (three 32-bit words), reachable from int $0x80

def i32(v):
    return struct.pack("<i", v)

def code(family, typ, proto, how):
    if how == "int80-socketcall":  # socketcall(SYS_SOCKET=1, &args)
        ctypes.memmove(ARGS, i32(family) + i32(typ) + i32(proto), 12)
        body = b"\\xb8" + i32(102) + b"\\xbb" + i32(1) + b"\\xb9" + i32(ARGS) + b"\\xcd\\x80"
    elif how == "int80-socket":  # i386 socket(2) = 359
        body = b"\\xb8" + i32(359) + b"\\xbb" + i32(family) + b"\\xb9" + i32(typ) + b"\\xba" + i32(proto) + b"\\xcd\\x80"
    else:  # x32 socket(2) = __X32_SYSCALL_BIT | 41 through \`syscall\`
        body = b"\\xb8" + i32(0x40000000 | 41) + b"\\xbf" + i32(family) + b"\\xbe" + i32(typ) + b"\\xba" + i32(proto) + b"\\x0f\\x05"
    # push rbx; <body>; movsxd rax, eax; pop rbx; ret
    return b"\\x53" + body + b"\\x48\\x63\\xc0\\x5b\\xc3"

def probe(family, typ, proto, how):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        fn_bytes = code(family, typ, proto, how)
        ctypes.memmove(page, fn_bytes, len(fn_bytes))
        ret = ctypes.CFUNCTYPE(ctypes.c_long)(page)()
        os.write(w, ("fd" if ret >= 0 else "refused:%d" % -ret).encode())
        os._exit(0)
    os.close(w)
    said = os.read(r, 100).decode()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return "killed:%d" % os.WTERMSIG(status)
    return said or "exit:%d" % os.WEXITSTATUS(status)

FAMILIES = {"AF_VSOCK": (40, 1, 0), "AF_PACKET": (17, 3, 0), "NETLINK_NETFILTER": (16, 3, 12)}
out = {}
for name, (f, t, p) in FAMILIES.items():
    for how in ("int80-socketcall", "int80-socket", "x32-socket"):
        out["%s via %s" % (name, how)] = probe(f, t, p, how)
print(json.dumps(out))
`;

describe('abuse: socket families through the 32-bit ABIs', { skip: skip ?? false }, () => {
  let api: ForkboxApi;
  let id: string;
  withOneSandbox((s) => {
    ({ api, id } = s);
  });

  it('no refused family opens through int $0x80 socketcall, i386 socket or x32, from a command or the REPL', async () => {
    const r = await bothPython<Record<string, string>>(api, id, SCRIPT);
    for (const [where, res] of Object.entries(r)) {
      assert.equal(Object.keys(res).length, 9, `${where}: ${JSON.stringify(res)}`);
      for (const [call, outcome] of Object.entries(res))
        assert.notEqual(outcome, 'fd', `${where}: ${call} opened a socket (${JSON.stringify(res)})`);
    }
  });

  it('the sandbox keeps working afterwards', async () => {
    const r = await api.exec(id, { argv: ['true'] });
    assert.equal(r.exitCode, 0);
  });
});
