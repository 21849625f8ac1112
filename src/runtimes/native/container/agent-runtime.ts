/**
 * How a template's PID 1 (the agent, Python) is started. An image with python3 runs the agent on it. An
 * image without one (busybox, distroless, musl images) runs it on the default image's Python: that
 * image's root layer is bind-mounted read-only at /.forkbox/runtime, and PID 1 is the runtime's own
 * dynamic loader running its python3 with `--library-path` — no LD_* or PYTHON* variable, so every
 * command the agent execs sees the image's own environment, loader and libraries (docs/IMAGES.md).
 */
import { lstatSync, readlinkSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import type { ImageRecord } from '../../../domain/types.ts';

/** Where the runtime's root is mounted inside a template and every sandbox forked from it. */
export const RUNTIME_MOUNT = '/.forkbox/runtime';

/** The image whose Python runs the agent in images without one, and how to build it. */
export const RUNTIME_IMAGE = 'debian';

const AGENT = ['-I', '/.forkbox/bin/agent.py'];

/** The glibc dynamic loader's path on each architecture Node reports. */
const LOADERS: Record<string, string> = {
  x64: '/lib64/ld-linux-x86-64.so.2',
  arm64: '/lib/ld-linux-aarch64.so.1',
};

export interface AgentStart {
  /** PID 1's argv. -I (isolated mode): the image's environment cannot inject code into the agent. */
  agentArgs: string[];
  /** The runtime's host layer directory, mounted read-only at RUNTIME_MOUNT; null when the image has python3. */
  runtimeDir: string | null;
}

/**
 * `path` (absolute) resolved inside the directory `root` as a process chrooted there would: absolute
 * symlinks restart at `root`, `..` stops at it. Returns the path relative to root, or null when a
 * component is missing or the links loop.
 */
export function resolveInRoot(root: string, path: string): string | null {
  const todo = path.split('/').filter((c) => c !== '' && c !== '.');
  const done: string[] = [];
  let hops = 0;
  while (todo.length > 0) {
    const c = todo.shift() as string;
    if (c === '..') {
      done.pop();
      continue;
    }
    const rel = [...done, c].join('/');
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(join(root, rel));
    } catch {
      return null;
    }
    if (!st.isSymbolicLink()) {
      done.push(c);
      continue;
    }
    if (++hops > 40) return null;
    const target = readlinkSync(join(root, rel));
    if (target.startsWith('/')) done.length = 0;
    todo.unshift(...target.split('/').filter((x) => x !== '' && x !== '.'));
  }
  return done.join('/');
}

function missing(image: ImageRecord, why: string): ForkboxError {
  return new ForkboxError(
    'requirement_missing',
    `image '${image.name}' has no python3, so forkbox's agent runs on the '${RUNTIME_IMAGE}' image's Python, but ${why}. Run 'forkbox images build ${RUNTIME_IMAGE}', or use an image with python3.`,
    { image: image.name, runtimeImage: RUNTIME_IMAGE },
  );
}

/** PID 1's argv for `image`; `runtime` is the default image (undefined when it is not built). */
export function agentStart(image: ImageRecord, runtime: ImageRecord | undefined): AgentStart {
  if (image.python) return { agentArgs: [image.python, ...AGENT], runtimeDir: null };
  if (!runtime) throw missing(image, 'that image is not built');
  const [layer, ...more] = runtime.layers;
  if (!layer || more.length > 0 || !runtime.python)
    throw missing(image, 'that image is not one layer with python3');
  const python = resolveInRoot(layer, runtime.python);
  const loaderPath = LOADERS[process.arch];
  const loader = loaderPath ? resolveInRoot(layer, loaderPath) : null;
  if (!python || !loader) throw missing(image, `its layer ${layer} lacks python3 or the dynamic loader`);
  const at = (rel: string) => posix.join(RUNTIME_MOUNT, rel);
  // The loader's own directory holds libc and the libraries Python's extension modules link.
  const libs = [...new Set([dirname(loader), 'usr/lib'])].map(at).join(':');
  return { agentArgs: [at(loader), '--library-path', libs, at(python), ...AGENT], runtimeDir: layer };
}
