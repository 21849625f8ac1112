/** `forkbox exec ID [options] -- CMD...`: run a command in a sandbox, streaming its output. */
import type { Command } from 'commander';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { buildExecRequest, type ExecCliOptions, streamExec } from '../exec-stream.ts';
import { trapInterrupts } from '../interrupt.ts';
import { collectKeyValue, parseDuration } from '../parse.ts';

export function addExecOptions(cmd: Command): Command {
  return cmd
    .option('--cwd <dir>', 'working directory inside the sandbox')
    .option('--env <K=V>', 'environment variable for the command (repeatable)', collectKeyValue('--env'))
    .option('--timeout <duration>', 'kill the command after this long, e.g. 30s, 5m', parseDuration)
    .option('-c, --shell', 'run the words as one /bin/sh -c command line')
    .option(
      '--no-stdin',
      'do not send our stdin to the command (by default it is sent when it is not a terminal)',
    );
}

export function register(program: Command, ctx: CliContext): void {
  const cmd = defineCommand(program, 'exec')
    .argument('<id>', 'sandbox id or name')
    .argument('<command...>', 'the command and its arguments (put -- before it)');
  addExecOptions(cmd).action(async (id: string, words: string[], o: ExecCliOptions) => {
    // Ctrl-C aborts the exec request: the daemon stops the command's whole process tree.
    const trap = trapInterrupts();
    try {
      const api = await trap.settle(ctx.api({ signal: trap.signal }));
      const req = await trap.settle(buildExecRequest(words, o));
      ctx.setExitCode(await trap.settle(streamExec(ctx, api, id, req)));
    } finally {
      trap.release();
    }
  });
}
