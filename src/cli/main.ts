/** The `forkbox` CLI: the program, its global options, and the wiring of every command. */
import { Command } from 'commander';
import { pino } from 'pino';
import { ForkboxError } from '../domain/errors.ts';
import type { ForkboxApi } from '../service/api.ts';
import { createDaemonClient, type DaemonClient } from '../transports/daemon-client.ts';
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
import { resolveRemote } from './remote.ts';

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
    .option('--url <url>', "a remote daemon's listener, e.g. http://host:7777 (env FORKBOX_URL)")
    // No --token option: an argv value is readable by every local user through ps.
    .option('--token-file <file>', 'file holding the bearer token for --url (else env FORKBOX_TOKEN)')
    // Throw instead of process.exit() so main() maps every failure to one exit code in one place.
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)');
  for (const c of COMMANDS) c.register(program, ctx);
  program.hook('preAction', (_program, action) => {
    let top = action;
    while (top.parent && top.parent !== program) top = top.parent;
    const o = program.opts<{ url?: string; tokenFile?: string }>();
    // Commander gives a global option precedence even after the subcommand, so `serve --token-file F`
    // (the daemon's tenants file) lands here: hand it back to serve, which never talks to a daemon.
    if (top.name() === 'serve' && o.tokenFile !== undefined) {
      if (top.getOptionValue('tokenFile') === undefined) top.setOptionValue('tokenFile', o.tokenFile);
      program.setOptionValue('tokenFile', undefined);
    }
    // The stdio MCP server holds a daemon session, which only the local socket serves.
    if (top.name() === 'mcp' && resolveRemote(o) !== undefined) {
      throw new ForkboxError(
        'invalid_argument',
        "'forkbox mcp' serves the local daemon over stdio and does not go through --url / FORKBOX_URL. Point the MCP client at URL/mcp with the bearer token instead, or unset FORKBOX_URL.",
      );
    }
  });
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
        const remote = resolveRemote(program.opts<{ url?: string; tokenFile?: string }>());
        if (remote) {
          // Remote mode: never start a local daemon nor touch the local state dir.
          client = createDaemonClient({ url: remote.url, token: remote.token });
          return client;
        }
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
