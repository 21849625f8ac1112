/** `forkbox exec ID [options] -- CMD...`: run a command in a sandbox, streaming its output. */
import type { Command } from 'commander';
import type { CliContext } from '../context.ts';
import { buildExecRequest, type ExecCliOptions, streamExec } from '../exec-stream.ts';
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
  const cmd = program
    .command('exec')
    .description('run a command in a sandbox; exits with its exit code (128+signal when killed)')
    .argument('<id>', 'sandbox id or name')
    .argument('<command...>', 'the command and its arguments (put -- before it)');
  addExecOptions(cmd).action(async (id: string, words: string[], o: ExecCliOptions) => {
    const api = await ctx.api();
    const req = await buildExecRequest(words, o);
    ctx.setExitCode(await streamExec(ctx, api, id, req));
  });
}
