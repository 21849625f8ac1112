/** The CLI program run in-process against an API (no daemon), its stdout, stderr and exit code captured. */
import type { Command } from 'commander';
import type { CliContext } from '../../src/cli/context.ts';
import { buildProgram } from '../../src/cli/main.ts';
import { createOutput } from '../../src/cli/output/output.ts';
import type { RecordedApi } from './test-engine.ts';

export async function runCliInProcess(args: string[], api: RecordedApi) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  let code = 0;
  const io = {
    stdout: { write: (s: string) => stdout.push(s) },
    stderr: { write: (s: string) => stderr.push(s) },
  };
  const ctx: CliContext = {
    globals: () => {
      const o = program.opts<{ stateDir: string; json?: boolean }>();
      return { stateDir: o.stateDir, json: o.json === true };
    },
    out: () => createOutput(ctx.globals().json, io),
    api: async () => api,
    setExitCode: (c) => {
      code = c;
    },
  };
  const program = await buildProgram(ctx);
  // Subcommands copy the output settings when created: configure every one.
  const capture = (c: Command) => {
    c.configureOutput({ writeOut: (s) => stdout.push(s), writeErr: (s) => stderr.push(s) });
    c.commands.forEach(capture);
  };
  capture(program);
  try {
    await program.parseAsync(['node', 'forkbox', ...args]);
  } catch (e) {
    code = createOutput(false, io).error(e);
  }
  return { code, stdout: stdout.join(''), stderr: stderr.join(''), api };
}
