/**
 * Making user namespaces on the host (docs/SECURITY.md, "User namespaces"). The daemon is multi-threaded,
 * so it cannot unshare(CLONE_NEWUSER) itself; a short-lived helper on the host's python3 forks one child
 * per namespace (optionally switching to an owner uid first: a namespace's owner is whoever makes it, and
 * the kernel charges its per-user counters to that owner), each child unshares, the helper (root) writes
 * the maps, and the daemon opens `/proc/<child>/ns/user` for each before the helper lets them go. The
 * namespaces then live as long as the daemon's descriptors (or a process joined to them) do.
 *
 * Used for a template's own namespace (owned by its range's first uid; runc joins it) and for the
 * idmaps of layer mounts (host/idmapped-overlay.ts), which hold no process at all.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { ForkboxError } from '../../../domain/errors.ts';
import { which } from '../../../util/subprocess.ts';

export interface UsernsSpec {
  /** Host uid (and gid) the namespace is made by, i.e. its owner; default root. */
  owner?: number;
  /** uid_map and gid_map lines ("inside outside count"), the same for both. */
  map: string;
}

// The helper: stdin one JSON line {"ns": [{owner, map}]}; stdout one pid per line as each namespace is
// mapped, then "ok"; it holds the children until stdin closes. Standard library only.
const HELPER = String.raw`
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
spec = json.loads(sys.stdin.readline())["ns"]
kids = []
for s in spec:
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(ready_r); os.close(go_w)
            for _, w, _r in kids:
                os.close(w)
            o = s.get("owner")
            if o is not None:
                os.setgroups([]); os.setresgid(o, o, o); os.setresuid(o, o, o)
            if libc.unshare(0x10000000) != 0:
                os._exit(2)
            os.write(ready_w, b"x")
            os.read(go_r, 1)
        finally:
            os._exit(0)
    os.close(ready_w); os.close(go_r)
    kids.append((pid, go_w, ready_r))
try:
    for (pid, _w, r), s in zip(kids, spec):
        if os.read(r, 1) != b"x":
            raise OSError("the namespace's process ended before it unshared")
        for f in ("uid_map", "gid_map"):
            with open("/proc/%d/%s" % (pid, f), "w") as fh:
                fh.write(s["map"])
        sys.stdout.write("%d\n" % pid); sys.stdout.flush()
    sys.stdout.write("ok\n"); sys.stdout.flush()
    sys.stdin.read()
except Exception as e:
    sys.stdout.write("E %s\n" % e); sys.stdout.flush()
finally:
    for pid, w, _r in kids:
        try:
            os.write(w, b"x")
        except OSError:
            pass
    for pid, _w, _r in kids:
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass
`;

/** The host's own python3 (Debian's, else the first on PATH): the helper is root's, never an image's. */
function hostPython(): string {
  const p = ['/usr/bin/python3', which('python3')].find((x) => x !== null && x !== undefined && x !== '');
  if (!p)
    throw new ForkboxError(
      'requirement_missing',
      "making sandboxes' user namespaces needs the host's python3: install the Debian package 'python3'.",
    );
  return p;
}

/**
 * One user namespace per spec, as open descriptors of their nsfs files (close them when done). Rejects,
 * closing what it opened, when the kernel refuses one.
 */
export function makeUserNamespaces(specs: UsernsSpec[], timeoutMs = 15000): Promise<number[]> {
  if (specs.length === 0) return Promise.resolve([]);
  return new Promise<number[]>((resolve, reject) => {
    const child = spawn(hostPython(), ['-I', '-S', '-c', HELPER], { stdio: ['pipe', 'pipe', 'pipe'] });
    const fds: number[] = [];
    let out = '';
    let err = '';
    let settled = false;
    const finish = (e: Error | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.stdin.end();
      if (e) {
        for (const fd of fds) closeSync(fd);
        child.kill('SIGKILL');
        reject(e);
      } else resolve(fds);
    };
    const timer = setTimeout(
      () =>
        finish(
          new ForkboxError('timeout', `making ${specs.length} user namespaces took over ${timeoutMs} ms.`),
        ),
      timeoutMs,
    );
    child.stderr.on('data', (b: Buffer) => {
      if (err.length < 4000) err += b.toString();
    });
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      for (let nl = out.indexOf('\n'); nl >= 0; nl = out.indexOf('\n')) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        if (line === 'ok') finish(null);
        else if (/^\d+$/.test(line)) {
          try {
            fds.push(openSync(`/proc/${line}/ns/user`, 'r'));
          } catch (e) {
            finish(e as Error);
          }
        } else
          finish(new ForkboxError('internal', `could not make a user namespace: ${line.replace(/^E /, '')}`));
      }
    });
    child.on('error', (e) => finish(e));
    child.on('exit', (code) => {
      if (!settled)
        finish(
          new ForkboxError(
            'internal',
            `the user-namespace helper exited (${code}) after ${fds.length} of ${specs.length} namespaces${err ? `: ${err.trim()}` : ''}`,
          ),
        );
    });
    child.stdin.write(`${JSON.stringify({ ns: specs })}\n`);
  });
}

/** The idmap that shows files stored for container ids (host 100000 + id) as ids of the block at `base`. */
export function storageIdmap(storageStart: number, base: number, size: number): string {
  // Host root stays root: overlayfs makes its work files with the mounter's credentials.
  return `0 0 1\n${storageStart} ${base} ${size}\n`;
}

/** The idmap that shows a host directory's files (host uid N) as uid N of the block at `base`. */
export function hostIdmap(base: number, size: number): string {
  return `0 ${base} ${size}\n`;
}
