/**
 * `forkbox run [options] -- CMD...`: an ephemeral sandbox for one command (created, used, killed). With
 * no command, a pulled image's Entrypoint + Cmd.
 */
import type { Command } from 'commander';
import { ForkboxError } from '../../domain/errors.ts';
import type { ForkboxApi } from '../../service/api.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { buildExecRequest, type ExecCliOptions, streamExec } from '../exec-stream.ts';
import { trapInterrupts } from '../interrupt.ts';
import { parseDuration, parseDurationSeconds } from '../parse.ts';
import { addLimitOptions, createShowingPull, type LimitOptions, limitsToRequest } from './limit-options.ts';

/** Without --timeout, a sandbox left behind by a crashed CLI (kill -9) is still reaped after this long. */
const DEFAULT_SAFETY_TTL_S = 24 * 3600;

type RunOptions = LimitOptions & Omit<ExecCliOptions, 'env'> & { ttl?: number };

function execOptions(o: RunOptions): ExecCliOptions {
  const execOpts: ExecCliOptions = { shell: o.shell ?? false, stdin: o.stdin ?? true };
  if (o.cwd !== undefined) execOpts.cwd = o.cwd;
  if (o.timeout !== undefined) execOpts.timeout = o.timeout;
  return execOpts;
}

/** A pulled image's default command: its Entrypoint followed by its Cmd (as `docker run IMAGE`). */
async function imageCommand(api: ForkboxApi, image: string): Promise<string[]> {
  const rec = (await api.listImages()).find((i) => i.name === image);
  const argv = [...(rec?.config?.entrypoint ?? []), ...(rec?.config?.cmd ?? [])];
  if (argv.length === 0)
    throw new ForkboxError(
      'invalid_argument',
      `image '${image}' has no default command (no Entrypoint or Cmd in its config): give one after --.`,
    );
  return argv;
}

async function runOnce(ctx: CliContext, words: string[], o: RunOptions): Promise<void> {
  const out = ctx.out();
  let api: ForkboxApi | undefined;
  let id: string | undefined;
  let created: Promise<void> = Promise.resolve();
  let killing: Promise<void> | undefined;
  const kill = (): Promise<void> => {
    if (id === undefined || api === undefined) return Promise.resolve();
    const sid = id;
    killing ??= api.killSandbox(sid).then(
      () => undefined,
      (e: unknown) =>
        out.note(`could not kill sandbox ${sid}: ${(e as Error).message}. Run 'forkbox kill ${sid}'.`),
    );
    return killing;
  };
  // Ctrl-C: the exec request is aborted (the daemon stops the command), then the sandbox is killed — once
  // its create has answered, if it was under way. A second Ctrl-C exits without waiting for the kill.
  const trap = trapInterrupts({
    onInterrupt: async () => {
      await created;
      await kill();
    },
    onForce: () => {
      if (id !== undefined)
        out.note(`exiting before sandbox ${id} was killed: run 'forkbox kill ${id}' if it is still listed.`);
    },
  });
  try {
    api = await trap.settle(ctx.api());
    const execApi = await trap.settle(ctx.api({ signal: trap.signal }));
    if (words.length === 0 && o.image === undefined)
      throw new ForkboxError(
        'invalid_argument',
        "give a command to run (after --), or an image with a default command: 'forkbox run --image REF'.",
      );
    const createReq = limitsToRequest(o);
    createReq.ttlSeconds =
      o.ttl ?? (o.timeout !== undefined ? Math.ceil(o.timeout) + 60 : DEFAULT_SAFETY_TTL_S);
    createReq.labels = { 'forkbox.run': 'true' };
    // Not through the trap's signal: a create cut short could leave a sandbox whose id we never learn.
    const creating = createShowingPull(api, createReq);
    created = creating.then(
      (sb) => {
        id = sb.id;
      },
      () => undefined, // the failure is reported below, through `creating`
    );
    const sb = await trap.settle(creating);
    const argv = words.length > 0 ? words : await imageCommand(api, sb.image);
    const req = await trap.settle(buildExecRequest(argv, execOptions(o)));
    ctx.setExitCode(await trap.settle(streamExec(ctx, execApi, sb.id, req)));
  } finally {
    await kill();
    trap.release();
  }
}

export function register(program: Command, ctx: CliContext): void {
  const cmd = defineCommand(program, 'run')
    .argument(
      '[command...]',
      "the command and its arguments (put -- before it; default: the image's Entrypoint and Cmd)",
    )
    .option('--cwd <dir>', 'working directory inside the sandbox')
    .option('--timeout <duration>', 'kill the command after this long, e.g. 30s, 5m', parseDuration)
    .option(
      '--ttl <duration>',
      `reap the sandbox after this long even if this CLI dies (default: timeout + 1m, else 24h)`,
      parseDurationSeconds,
    )
    .option('-c, --shell', 'run the words as one /bin/sh -c command line')
    .option('--no-stdin', 'do not send our stdin to the command');
  addLimitOptions(cmd).action((words: string[], o: RunOptions) => runOnce(ctx, words, o));
}
