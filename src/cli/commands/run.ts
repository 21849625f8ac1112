/** `forkbox run [options] -- CMD...`: an ephemeral sandbox for one command (created, used, killed). */
import { constants } from 'node:os';
import type { Command } from 'commander';
import type { CliContext } from '../context.ts';
import { buildExecRequest, type ExecCliOptions, streamExec } from '../exec-stream.ts';
import { parseDuration, parseDurationSeconds } from '../parse.ts';
import { addLimitOptions, type LimitOptions, limitsToRequest } from './limit-options.ts';

/** Without --timeout, a sandbox left behind by a crashed CLI (kill -9) is still reaped after this long. */
const DEFAULT_SAFETY_TTL_S = 24 * 3600;
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

type RunOptions = LimitOptions & Omit<ExecCliOptions, 'env'> & { ttl?: number };

export function register(program: Command, ctx: CliContext): void {
  const cmd = program
    .command('run')
    .description(
      'run one command in a fresh sandbox, then kill it (also on Ctrl-C); exits with its exit code',
    )
    .argument('<command...>', 'the command and its arguments (put -- before it)')
    .option('--cwd <dir>', 'working directory inside the sandbox')
    .option('--timeout <duration>', 'kill the command after this long, e.g. 30s, 5m', parseDuration)
    .option(
      '--ttl <duration>',
      `reap the sandbox after this long even if this CLI dies (default: timeout + 1m, else 24h)`,
      parseDurationSeconds,
    )
    .option('-c, --shell', 'run the words as one /bin/sh -c command line')
    .option('--no-stdin', 'do not send our stdin to the command');
  addLimitOptions(cmd).action(async (words: string[], o: RunOptions) => {
    const api = await ctx.api();
    const out = ctx.out();
    const execOpts: ExecCliOptions = { shell: o.shell ?? false, stdin: o.stdin ?? true };
    if (o.cwd !== undefined) execOpts.cwd = o.cwd;
    if (o.timeout !== undefined) execOpts.timeout = o.timeout;
    const req = await buildExecRequest(words, execOpts);
    const createReq = limitsToRequest(o);
    createReq.ttlSeconds =
      o.ttl ?? (o.timeout !== undefined ? Math.ceil(o.timeout) + 60 : DEFAULT_SAFETY_TTL_S);
    createReq.labels = { 'forkbox.run': 'true' };

    let id: string | undefined;
    let interrupted: NodeJS.Signals | undefined;
    let cleaning: Promise<void> | undefined;
    const cleanup = (): Promise<void> => {
      if (id === undefined) return Promise.resolve();
      const sid = id;
      cleaning ??= api.killSandbox(sid).then(
        () => undefined,
        (e: unknown) =>
          out.note(`could not kill sandbox ${sid}: ${(e as Error).message}. Run 'forkbox kill ${sid}'.`),
      );
      return cleaning;
    };
    const exitOnSignal = (sig: NodeJS.Signals) => {
      void cleanup().finally(() => process.exit(128 + (constants.signals[sig] ?? 2)));
    };
    const onSignal = (sig: NodeJS.Signals) => {
      if (interrupted) return;
      interrupted = sig;
      // Before the sandbox exists, the create's continuation below kills it and exits.
      if (id !== undefined) exitOnSignal(sig);
    };
    for (const s of SIGNALS) process.on(s, onSignal);
    try {
      const sb = await api.createSandbox(createReq);
      id = sb.id;
      if (interrupted) {
        exitOnSignal(interrupted);
        return;
      }
      ctx.setExitCode(await streamExec(ctx, api, sb.id, req));
    } finally {
      if (!interrupted) {
        await cleanup();
        for (const s of SIGNALS) process.off(s, onSignal);
      }
    }
  });
}
