/** Shared by `exec` and `run`: run a command in a sandbox, streaming its output to ours. */
import { ForkboxError } from '../domain/errors.ts';
import type { ExecOutcome, ExecRequest, ForkboxApi } from '../service/api.ts';
import type { CliContext } from './context.ts';
import { execExitStatus } from './parse.ts';

/** Sync exec sends stdin inside one JSON body, bounded by the local API's exec body limit. */
const MAX_STDIN = 12 * 1024 * 1024;

/** All of our stdin when it is a pipe or file (not a terminal); undefined otherwise. */
export async function readPipedStdin(stdin: NodeJS.ReadStream = process.stdin): Promise<Buffer | undefined> {
  if (stdin.isTTY) return undefined;
  const parts: Buffer[] = [];
  let total = 0;
  for await (const chunk of stdin) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    total += b.length;
    if (total > MAX_STDIN) {
      throw new ForkboxError(
        'too_large',
        `stdin is larger than ${MAX_STDIN} bytes. Copy the data in with 'forkbox cp' and read it from a file instead.`,
      );
    }
    parts.push(b);
  }
  return Buffer.concat(parts);
}

export function outcomeNotes(o: ExecOutcome, note: (m: string) => void): void {
  if (o.timedOut) note('timed out');
  if (o.oomKilled) note('out of memory');
  if (o.truncated) note('output truncated');
  if (o.cancelled) note('cancelled');
}

/** Run `req` in sandbox `id`; stream (or, with --json, print) the result; return the exit status. */
export async function streamExec(
  ctx: CliContext,
  api: ForkboxApi,
  id: string,
  req: ExecRequest,
): Promise<number> {
  const out = ctx.out();
  if (out.json) {
    const o = await api.exec(id, req);
    out.result(o, () => '');
    return execExitStatus(o);
  }
  const o = await api.exec(id, req, {
    onOutput: (chunk) => {
      (chunk.stream === 'stderr' ? process.stderr : process.stdout).write(chunk.data);
    },
  });
  outcomeNotes(o, (m) => out.note(m));
  return execExitStatus(o);
}

export interface ExecCliOptions {
  cwd?: string;
  env?: Record<string, string>;
  timeout?: number;
  stdin?: boolean;
  shell?: boolean;
}

/** Build an ExecRequest from `exec`/`run` options and the command words. */
export async function buildExecRequest(words: string[], o: ExecCliOptions): Promise<ExecRequest> {
  const req: ExecRequest = o.shell ? { cmd: words.join(' ') } : { argv: words };
  if (o.cwd !== undefined) req.cwd = o.cwd;
  if (o.env !== undefined) req.env = o.env;
  if (o.timeout !== undefined) req.timeoutSeconds = o.timeout;
  if (o.stdin !== false) {
    const data = await readPipedStdin();
    if (data !== undefined) req.stdin = data;
  }
  return req;
}
