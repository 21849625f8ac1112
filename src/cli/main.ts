/**
 * The `forkbox` CLI: the program, its global options, and the wiring of every command.
 *
 * Start-up is kept small: commander and the command table (command-table.ts) are loaded, then only the
 * module of the command being run; the daemon client is imported when a command first asks for the API.
 * `forkbox --version` loads no command at all, `forkbox run` loads run.ts and the daemon client — never
 * the engine, the MCP server, the REST app or pino.
 */
import { Command, Help } from 'commander';
import { ForkboxError } from '../domain/errors.ts';
import type { ForkboxApi } from '../service/api.ts';
import type { DaemonClient } from '../transports/daemon-client.ts';
import { VERSION } from '../version.ts';
import { COMMANDS, type CommandEntry, commandWord, findCommand } from './command-table.ts';
import { defaultStateDir } from './config.ts';
import type { CliContext, GlobalOptions } from './context.ts';
import { createOutput, type Output } from './output/output.ts';

interface RemoteFlags {
  url?: string;
  tokenFile?: string;
}

/** The top-level program with its global options; no commands yet. */
function baseProgram(): Command {
  return (
    new Command('forkbox')
      .description('Sandboxes for AI agents that fork like processes.')
      .version(VERSION, '-V, --version')
      .option('--state-dir <dir>', 'state directory (env FORKBOX_STATE_DIR)', defaultStateDir())
      .option('--json', 'machine-readable output on stdout')
      .option('--url <url>', "a remote daemon's listener, e.g. http://host:7777 (env FORKBOX_URL)")
      // No --token option: an argv value is readable by every local user through ps.
      .option('--token-file <file>', 'file holding the bearer token for --url (else env FORKBOX_TOKEN)')
      // Throw instead of process.exit() so main() maps every failure to one exit code in one place.
      .exitOverride()
      .showHelpAfterError('(run with --help for usage)')
  );
}

/**
 * A command that is listed (in `--help`, and by commander's "unknown command" suggestions) but not
 * loaded, because another command is running.
 */
function addStub(program: Command, entry: CommandEntry, stubs: WeakSet<Command>): void {
  const cmd = program.command(entry.name).description(entry.description);
  if (entry.aliases) cmd.aliases(entry.aliases);
  cmd.action(() => {
    throw new ForkboxError('internal', `command '${entry.name}' ran without being loaded`);
  });
  stubs.add(cmd);
}

/** Global options that act on a command before it runs (`serve`'s token file, `mcp`'s locality). */
async function checkGlobals(program: Command, top: Command): Promise<void> {
  const o = program.opts<RemoteFlags>();
  // Commander gives a global option precedence even after the subcommand, so `serve --token-file F`
  // (the daemon's tenants file) lands here: hand it back to serve, which never talks to a daemon.
  if (top.name() === 'serve' && o.tokenFile !== undefined) {
    if (top.getOptionValue('tokenFile') === undefined) top.setOptionValue('tokenFile', o.tokenFile);
    program.setOptionValue('tokenFile', undefined);
  }
  // The stdio MCP server holds a daemon session, which only the local socket serves.
  if (top.name() === 'mcp') {
    const { resolveRemote } = await import('./remote.ts');
    if (resolveRemote(o) !== undefined) {
      throw new ForkboxError(
        'invalid_argument',
        "'forkbox mcp' serves the local daemon over stdio and does not go through --url / FORKBOX_URL. Point the MCP client at URL/mcp with the bearer token instead, or unset FORKBOX_URL.",
      );
    }
  }
}

/**
 * The program, with `load` (default: the command argv names) fully defined and every other command
 * listed by name, description and usage only.
 */
export async function buildProgram(
  ctx: CliContext,
  load: readonly CommandEntry[] = COMMANDS,
): Promise<Command> {
  const program = baseProgram();
  const stubs = new WeakSet<Command>();
  const modules = await Promise.all(load.map((e) => e.load()));
  for (const entry of COMMANDS) {
    const i = load.indexOf(entry);
    const mod = i >= 0 ? modules[i] : undefined;
    if (mod) mod.register(program, ctx);
    else addStub(program, entry, stubs);
  }
  program.configureHelp({
    subcommandTerm(cmd) {
      const entry = stubs.has(cmd) ? findCommand(cmd.name()) : undefined;
      if (!entry) return new Help().subcommandTerm(cmd);
      const names = [entry.name, ...(entry.aliases ?? []).slice(0, 1)].join('|');
      return entry.term === '' ? names : `${names} ${entry.term}`;
    },
  });
  program.hook('preAction', async (_program, action) => {
    let top = action;
    while (top.parent && top.parent !== program) top = top.parent;
    await checkGlobals(program, top);
  });
  return program;
}

/** A client of the daemon named by the global options (remote, or the local one, started if absent). */
async function connect(program: Command, stateDir: string): Promise<DaemonClient> {
  const { resolveRemote } = await import('./remote.ts');
  const remote = resolveRemote(program.opts<RemoteFlags>());
  if (remote) {
    // Remote mode: never start a local daemon nor touch the local state dir.
    const { createDaemonClient } = await import('../transports/daemon-client.ts');
    return createDaemonClient({ url: remote.url, token: remote.token, client: 'cli' });
  }
  const [{ connectOrStartDaemon }, { createStderrLog }] = await Promise.all([
    import('../transports/daemon-launcher.ts'),
    import('./output/stderr-log.ts'),
  ]);
  return connectOrStartDaemon({ stateDir, log: createStderrLog(), allowStart: true, client: 'cli' });
}

/** Run the CLI with `argv` (as process.argv: node, script, args...); resolves to the exit code. */
export async function main(argv: string[] = process.argv): Promise<number> {
  let exitCode = 0;
  let client: DaemonClient | undefined;
  let out: Output | undefined;
  let program: Command | undefined;
  const globals = (): GlobalOptions => {
    const o = program?.opts<{ stateDir: string; json?: boolean }>();
    return { stateDir: o?.stateDir ?? defaultStateDir(), json: o?.json === true };
  };
  const ctx: CliContext = {
    globals,
    out: () => {
      out ??= createOutput(globals().json);
      return out;
    },
    async api(opts = {}): Promise<ForkboxApi> {
      if (!program) throw new ForkboxError('internal', 'the API was asked for before the CLI was set up');
      client ??= await connect(program, globals().stateDir);
      return opts.signal ? client.withSignal(opts.signal) : client;
    },
    setExitCode(code) {
      exitCode = code;
    },
  };
  try {
    const selected = findCommand(commandWord(argv));
    program = await buildProgram(ctx, selected ? [selected] : []);
    await program.parseAsync(argv);
    return exitCode;
  } catch (e) {
    return (out ?? createOutput(argv.includes('--json'))).error(e);
  } finally {
    client?.close();
  }
}
