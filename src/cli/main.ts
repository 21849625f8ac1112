/** The `forkbox` CLI: the program, its global options, and the wiring of every command. */
import { Command } from 'commander';
import { pino } from 'pino';
import type { ForkboxApi } from '../service/api.ts';
import type { DaemonClient } from '../transports/daemon-client.ts';
import { connectOrStartDaemon } from '../transports/daemon-launcher.ts';
import { VERSION } from '../version.ts';
import * as cp from './commands/cp.ts';
import * as create from './commands/create.ts';
import * as df from './commands/df.ts';
import * as diff from './commands/diff.ts';
import * as doctor from './commands/doctor.ts';
import * as evalCmd from './commands/eval.ts';
import * as exec from './commands/exec.ts';
import * as fork from './commands/fork.ts';
import * as gc from './commands/gc.ts';
import * as images from './commands/images.ts';
import * as inspect from './commands/inspect.ts';
import * as kill from './commands/kill.ts';
import * as ls from './commands/ls.ts';
import * as mcp from './commands/mcp.ts';
import * as merge from './commands/merge.ts';
import * as pause from './commands/pause.ts';
import * as resume from './commands/resume.ts';
import * as run from './commands/run.ts';
import * as serve from './commands/serve.ts';
import * as snapshot from './commands/snapshot.ts';
import * as templates from './commands/templates.ts';
import { defaultStateDir } from './config.ts';
import type { CliContext, GlobalOptions } from './context.ts';
import { createOutput, type Output } from './output.ts';

const COMMANDS = [
  serve,
  mcp,
  doctor,
  images,
  templates,
  create,
  fork,
  merge,
  snapshot,
  diff,
  ls,
  inspect,
  exec,
  evalCmd,
  cp,
  kill,
  pause,
  resume,
  run,
  gc,
  df,
];

export function buildProgram(ctx: CliContext): Command {
  const program = new Command('forkbox')
    .description('Sandboxes for AI agents that fork like processes.')
    .version(VERSION, '-V, --version')
    .option('--state-dir <dir>', 'state directory (env FORKBOX_STATE_DIR)', defaultStateDir())
    .option('--json', 'machine-readable output on stdout')
    // Throw instead of process.exit() so main() maps every failure to one exit code in one place.
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)');
  for (const c of COMMANDS) c.register(program, ctx);
  return program;
}

/** Run the CLI with `argv` (as process.argv: node, script, args...); resolves to the exit code. */
export async function main(argv: string[] = process.argv): Promise<number> {
  let exitCode = 0;
  let client: DaemonClient | undefined;
  let out: Output | undefined;
  let program: Command;
  const globals = (): GlobalOptions => {
    const o = program.opts<{ stateDir: string; json?: boolean }>();
    return { stateDir: o.stateDir, json: o.json === true };
  };
  const ctx: CliContext = {
    globals,
    out: () => {
      out ??= createOutput(globals().json);
      return out;
    },
    async api(): Promise<ForkboxApi> {
      if (!client) {
        // Only warnings by default: the CLI's stderr is for the command's own output and notes.
        const log = pino({ level: process.env.FORKBOX_LOG_LEVEL ?? 'warn' }, pino.destination(2));
        client = await connectOrStartDaemon({ stateDir: globals().stateDir, log, allowStart: true });
      }
      return client;
    },
    setExitCode(code) {
      exitCode = code;
    },
  };
  program = buildProgram(ctx);
  try {
    await program.parseAsync(argv);
    return exitCode;
  } catch (e) {
    return (out ?? createOutput(argv.includes('--json'))).error(e);
  } finally {
    client?.close();
  }
}
