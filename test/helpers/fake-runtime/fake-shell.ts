/**
 * The commands a fake sandbox can run: a handful of programs (echo, cat, printenv, pwd, seq, sleep,
 * true, false) and `sh -c` / `bash -c` over a small shell (`;`, `&&`, newlines, quotes, `$VAR`,
 * `>&2`, `> file`, `>> file`, `exit N`). Enough for the runtime contract and the service tests; tests
 * add their own programs with `runtime.programs.set(name, fn)`. Every wait goes through `io.sleep` or
 * `io.readStdin`, so a kill (timeout, cancel, signal) ends any program at once.
 */
import { ForkboxError } from '../../../src/domain/errors.ts';
import type { FakeFs } from './fake-fs.ts';

/** Thrown inside a program when its process was killed; the exec then ends with the kill's signal. */
export const KILLED = Symbol('killed');

export interface ProcessIo {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  fs: FakeFs;
  out(data: string | Buffer): void;
  err(data: string | Buffer): void;
  /** All of stdin, once the writer closed it (empty when the exec has no stdin). */
  readStdin(): Promise<Buffer>;
  /** The next piece of stdin as it arrives; null once it is closed. */
  readStdinChunk(): Promise<Buffer | null>;
  /** Wait; throws KILLED when the process is killed meanwhile. */
  sleep(ms: number): Promise<void>;
  /** End the whole sandbox as if its PID 1 died (tests of a sandbox dying under a command). */
  crashSandbox(reason: string): void;
}

export type Program = (io: ProcessIo) => Promise<number> | number;

export function notFound(name: string): ForkboxError {
  return new ForkboxError('not_found', `${name}: No such file or directory`, { agentCode: 'not_found' });
}

export function builtinPrograms(): Map<string, Program> {
  const m = new Map<string, Program>();
  m.set('true', () => 0);
  m.set('false', () => 1);
  m.set('echo', (io) => {
    const args = io.argv.slice(1);
    const newline = args[0] !== '-n';
    io.out(`${(newline ? args : args.slice(1)).join(' ')}${newline ? '\n' : ''}`);
    return 0;
  });
  m.set('pwd', (io) => {
    io.out(`${io.cwd}\n`);
    return 0;
  });
  m.set('printenv', (io) => {
    const name = io.argv[1];
    if (name === undefined) {
      for (const [k, v] of Object.entries(io.env)) io.out(`${k}=${v}\n`);
      return 0;
    }
    const v = io.env[name];
    if (v === undefined) return 1;
    io.out(`${v}\n`);
    return 0;
  });
  m.set('seq', (io) => {
    const nums = io.argv.slice(1).map(Number);
    const [from, to] = nums.length >= 2 ? [nums[0] ?? 1, nums[1] ?? 0] : [1, nums[0] ?? 0];
    const lines: string[] = [];
    for (let i = from; i <= to; i++) lines.push(String(i));
    if (lines.length > 0) io.out(`${lines.join('\n')}\n`);
    return 0;
  });
  m.set('sleep', async (io) => {
    await io.sleep(Number(io.argv[1] ?? 0) * 1000);
    return 0;
  });
  m.set('cat', async (io) => {
    const files = io.argv.slice(1);
    if (files.length === 0) {
      for (let c = await io.readStdinChunk(); c !== null; c = await io.readStdinChunk()) io.out(c);
      return 0;
    }
    let status = 0;
    for (const f of files) {
      try {
        io.out(io.fs.read(f.startsWith('/') ? f : `${io.cwd}/${f}`).data);
      } catch {
        io.err(`cat: ${f}: No such file or directory\n`);
        status = 1;
      }
    }
    return status;
  });
  const shell: Program = (io) => {
    if (io.argv[1] !== '-c' || io.argv[2] === undefined) {
      io.err(`${io.argv[0]}: the fake shell runs only '-c SCRIPT'\n`);
      return 2;
    }
    return runScript(io.argv[2], io, m);
  };
  m.set('sh', shell);
  m.set('bash', shell);
  m.set('/bin/sh', shell);
  return m;
}

// ───────────── the shell ─────────────

/** Split a script into words, honouring quotes and expanding $VAR / ${VAR} outside single quotes. */
function words(line: string, env: Record<string, string>): string[] {
  const out: string[] = [];
  let cur = '';
  let has = false;
  let i = 0;
  const expand = () => {
    const m = /^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*)|(\?))/.exec(line.slice(i));
    if (!m) {
      cur += '$';
      i++;
      return;
    }
    cur += env[m[1] ?? m[2] ?? m[3] ?? ''] ?? '';
    i += m[0].length;
  };
  while (i < line.length) {
    const c = line[i] as string;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      cur += line.slice(i + 1, end < 0 ? line.length : end);
      i = end < 0 ? line.length : end + 1;
      has = true;
    } else if (c === '"') {
      i++;
      while (i < line.length && line[i] !== '"') {
        if (line[i] === '$') expand();
        else cur += line[i++];
      }
      i++;
      has = true;
    } else if (c === '$') {
      expand();
      has = true;
    } else if (/\s/.test(c)) {
      if (has) out.push(cur);
      cur = '';
      has = false;
      i++;
    } else {
      cur += c;
      has = true;
      i++;
    }
  }
  if (has) out.push(cur);
  return out;
}

/** Statements with the operator that joins each to the previous one. */
function statements(script: string): { op: ';' | '&&'; text: string }[] {
  const out: { op: ';' | '&&'; text: string }[] = [];
  let op: ';' | '&&' = ';';
  let cur = '';
  let quote: string | null = null;
  for (let i = 0; i < script.length; i++) {
    const c = script[i] as string;
    if (quote) {
      if (c === quote) quote = null;
      cur += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      cur += c;
    } else if (c === ';' || c === '\n' || (c === '&' && script[i + 1] === '&')) {
      if (cur.trim()) out.push({ op, text: cur.trim() });
      op = c === '&' ? '&&' : ';';
      if (c === '&') i++;
      cur = '';
    } else cur += c;
  }
  if (cur.trim()) out.push({ op, text: cur.trim() });
  return out;
}

async function runScript(script: string, io: ProcessIo, programs: Map<string, Program>): Promise<number> {
  let status = 0;
  const env = { ...io.env };
  for (const st of statements(script)) {
    if (st.op === '&&' && status !== 0) continue;
    const argv = words(st.text, { ...env, '?': String(status) });
    let out = io.out;
    const cmd: string[] = [];
    for (let i = 0; i < argv.length; i++) {
      const w = argv[i] as string;
      if (w === '>&2' || w === '1>&2') out = io.err;
      else if (w === '>' || w === '>>') {
        const target = argv[++i] ?? '';
        const path = target.startsWith('/') ? target : `${io.cwd}/${target}`;
        if (w === '>') io.fs.write(path, Buffer.alloc(0));
        out = (d) => io.fs.write(path, Buffer.from(d), { append: true });
      } else cmd.push(w);
    }
    const [name, ...args] = cmd;
    if (name === undefined) continue;
    if (name === 'exit') return Number(args[0] ?? status);
    if (name === 'cd') {
      io.cwd = args[0] ?? '/';
      status = 0;
      continue;
    }
    const assign = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(name);
    if (assign && args.length === 0) {
      env[assign[1] as string] = assign[2] ?? '';
      status = 0;
      continue;
    }
    const prog = programs.get(name);
    if (!prog) {
      io.err(`sh: 1: ${name}: not found\n`);
      status = 127;
      continue;
    }
    status = await prog({ ...io, argv: cmd, env, out });
  }
  return status;
}
