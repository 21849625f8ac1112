/**
 * Every `forkbox` command: its name, one-line description and help term, and how to load it. A
 * command's module (one per command in commands/) is imported only when that command runs, so the CLI
 * starts by loading this table and commander, not the ~20 command modules and what they import (the
 * engine for `serve`, the MCP server for `mcp`, ...). `--help` lists the commands from this table; the
 * unit test cli-command-table.test.ts checks that it says what each module defines.
 *
 * No imports but types: this module is on every command's path.
 */
import type { Command } from 'commander';
import type { CliContext } from './context.ts';

export interface CommandModule {
  register(program: Command, ctx: CliContext): void;
}

export interface CommandEntry {
  name: string;
  aliases?: readonly string[];
  description: string;
  /** What `forkbox --help` shows after the name: `[options]` and the arguments, as commander writes them. */
  term: string;
  load(): Promise<CommandModule>;
}

export const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'serve',
    description:
      'run the forkbox daemon: the local API on <state-dir>/forkbox.sock, and MCP (/mcp) + REST (/v1) on a TCP listener',
    term: '[options]',
    load: () => import('./commands/serve.ts'),
  },
  {
    name: 'mcp',
    description: 'serve MCP on stdio (for Claude Code, Cursor, any MCP client); logs go to stderr',
    term: '[options]',
    load: () => import('./commands/mcp.ts'),
  },
  {
    name: 'doctor',
    description: 'check the host for everything forkbox needs, and say how to fix what is missing',
    term: '',
    load: () => import('./commands/doctor.ts'),
  },
  {
    name: 'images',
    description: 'build, import, list and remove images',
    term: '',
    load: () => import('./commands/images.ts'),
  },
  {
    name: 'templates',
    aliases: ['template'],
    description: 'named templates: sandboxes created from one start with its Python modules imported',
    term: '',
    load: () => import('./commands/templates.ts'),
  },
  {
    name: 'create',
    description: 'create a sandbox and print its id',
    term: '[options]',
    load: () => import('./commands/create.ts'),
  },
  {
    name: 'fork',
    description: 'fork a running sandbox into N children that inherit its files and live Python state',
    term: '[options] <id>',
    load: () => import('./commands/fork.ts'),
  },
  {
    name: 'merge',
    description: "keep a fork: WINNER takes over PARENT's id and name; the parent's old processes end",
    term: '<parent> <winner>',
    load: () => import('./commands/merge.ts'),
  },
  {
    name: 'snapshot',
    description: "save and restore sandboxes' files and live Python state",
    term: '',
    load: () => import('./commands/snapshot.ts'),
  },
  {
    name: 'diff',
    description: 'show files added, removed and modified between two sandboxes (from their layers)',
    term: '[options] <a> [b]',
    load: () => import('./commands/diff.ts'),
  },
  {
    name: 'export',
    description: "write a sandbox's project changes as a patch for git apply",
    term: '[options] <id>',
    load: () => import('./commands/export.ts'),
  },
  {
    name: 'apply',
    description:
      "write a sandbox's project changes back to its host directory (refused if the host changed them)",
    term: '<id>',
    load: () => import('./commands/apply.ts'),
  },
  {
    name: 'ls',
    description: 'list live sandboxes',
    term: '[options]',
    load: () => import('./commands/ls.ts'),
  },
  {
    name: 'inspect',
    description: 'show a sandbox in detail',
    term: '<id>',
    load: () => import('./commands/inspect.ts'),
  },
  {
    name: 'exec',
    description: 'run a command in a sandbox; exits with its exit code (128+signal when killed)',
    term: '[options] <id> <command...>',
    load: () => import('./commands/exec.ts'),
  },
  {
    name: 'eval',
    description:
      "run Python (or --language node) code in the sandbox's REPL (state persists between calls); prints output and the value",
    term: '[options] <id> <code>',
    load: () => import('./commands/eval.ts'),
  },
  {
    name: 'cp',
    description: 'copy files or directories between this host and a sandbox; write sandbox paths as ID:/path',
    term: '[options] <src> <dst>',
    load: () => import('./commands/cp.ts'),
  },
  {
    name: 'kill',
    description: 'kill sandboxes and release their resources',
    term: '[options] <ids...>',
    load: () => import('./commands/kill.ts'),
  },
  {
    name: 'port',
    description: "publish a sandbox's loopback port on the host and print its address (127.0.0.2:PORT)",
    term: '[options] <id> <port>',
    load: () => import('./commands/port.ts'),
  },
  {
    name: 'browser',
    description:
      "drive the sandbox's Chromium: open a URL, print its snapshot with refs, click/fill by ref, save a screenshot",
    term: '',
    load: () => import('./commands/browser.ts'),
  },
  {
    name: 'pause',
    description: 'freeze a sandbox (its processes stop running; memory and files are kept)',
    term: '<id>',
    load: () => import('./commands/pause.ts'),
  },
  {
    name: 'resume',
    description: 'resume a paused sandbox',
    term: '<id>',
    load: () => import('./commands/resume.ts'),
  },
  {
    name: 'run',
    description:
      "run one command (default: the image's entrypoint) in a fresh sandbox, then kill it (also on Ctrl-C); exits with its exit code",
    term: '[options] [command...]',
    load: () => import('./commands/run.ts'),
  },
  {
    name: 'gc',
    description: 'remove leftovers of ended sandboxes (mounts, cgroups, directories)',
    term: '',
    load: () => import('./commands/gc.ts'),
  },
  {
    name: 'service',
    description: 'install the systemd unit that shares the daemon with a group of local users',
    term: '',
    load: () => import('./commands/service.ts'),
  },
  {
    name: 'df',
    description: 'show disk used by images and sandboxes',
    term: '',
    load: () => import('./commands/df.ts'),
  },
];

/** The entry named `name` (or one of its aliases). */
export function findCommand(name: string | undefined): CommandEntry | undefined {
  if (name === undefined) return undefined;
  return COMMANDS.find((c) => c.name === name || c.aliases?.includes(name));
}

/** Global options that take a value: the word after them is not the command name. */
const GLOBAL_VALUE_OPTIONS = new Set(['--state-dir', '--url', '--token-file']);

/**
 * The command an argv (node, script, args...) runs, found before commander parses it so that only that
 * command's module is loaded: the first word that is not a global option or its value. For
 * `forkbox help CMD`, CMD.
 */
export function commandWord(argv: readonly string[]): string | undefined {
  const words: string[] = [];
  for (let i = 2; i < argv.length && words.length < 2; i++) {
    const a = argv[i] ?? '';
    if (a === '--') break;
    if (a.startsWith('-')) {
      if (words.length === 0 && GLOBAL_VALUE_OPTIONS.has(a)) i++;
      continue;
    }
    words.push(a);
    if (a !== 'help') break;
  }
  return words[0] === 'help' ? words[1] : words[0];
}

/** `program.command(name)` with the table's description and aliases: how each command module starts. */
export function defineCommand(program: Command, name: string): Command {
  const entry = findCommand(name);
  if (!entry) throw new Error(`forkbox bug: no command '${name}' in cli/command-table.ts`);
  const cmd = program.command(entry.name).description(entry.description);
  if (entry.aliases) cmd.aliases(entry.aliases);
  return cmd;
}
