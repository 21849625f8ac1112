/**
 * The command table (src/cli/command-table.ts) lists every command without loading it: check that what
 * it says — name, aliases, description, the help term — is what each command's module defines, that
 * every module in src/cli/commands/ with a `register` is in it, and that the command word is found in argv
 * the way commander will parse it.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Command, Help } from 'commander';
import { COMMANDS, commandWord, findCommand } from '../../src/cli/command-table.ts';
import type { CliContext } from '../../src/cli/context.ts';
import { buildProgram } from '../../src/cli/main.ts';

const ctx: CliContext = {
  globals: () => ({ stateDir: '/nonexistent', json: false }),
  out: () => {
    throw new Error('no output expected');
  },
  api: async () => {
    throw new Error('no API expected');
  },
  setExitCode: () => undefined,
};

describe('cli command table', () => {
  it('says what each command module defines', async () => {
    for (const entry of COMMANDS) {
      const program = new Command('forkbox');
      (await entry.load()).register(program, ctx);
      assert.equal(program.commands.length, 1, `${entry.name} registers one top-level command`);
      const cmd = program.commands[0] as Command;
      assert.equal(cmd.name(), entry.name);
      assert.deepEqual(cmd.aliases(), [...(entry.aliases ?? [])]);
      assert.equal(cmd.description(), entry.description);
      const names = [entry.name, ...(entry.aliases ?? []).slice(0, 1)].join('|');
      const term = entry.term === '' ? names : `${names} ${entry.term}`;
      assert.equal(new Help().subcommandTerm(cmd), term, `${entry.name}'s help term`);
    }
  });

  it('lists every command module', () => {
    const dir = fileURLToPath(new URL('../../src/cli/commands', import.meta.url));
    const helpers = new Set(['limit-options']);
    const files = readdirSync(dir)
      .filter((f) => f.endsWith('.ts'))
      .map((f) => f.replace(/\.ts$/, ''))
      .filter((f) => !helpers.has(f));
    const listed = COMMANDS.map((c) => c.name).sort();
    assert.deepEqual(files.sort(), listed);
  });

  it('lists the same help with one command loaded as with all of them', async () => {
    const helpOf = async (only: string | undefined) => {
      const entry = findCommand(only);
      const p = await buildProgram(ctx, entry ? [entry] : []);
      return p.helpInformation();
    };
    const all = (await buildProgram(ctx)).helpInformation();
    assert.equal(await helpOf(undefined), all);
    assert.equal(await helpOf('run'), all);
    assert.equal(await helpOf('templates'), all);
  });

  it('finds the command word in argv as commander parses it', () => {
    const w = (...args: string[]) => commandWord(['node', 'forkbox', ...args]);
    assert.equal(w('run', '--', 'true'), 'run');
    assert.equal(w('--state-dir', '/x', 'exec', 'id', '--', 'ls'), 'exec');
    assert.equal(w('--state-dir=/x', '--json', 'ls'), 'ls');
    assert.equal(w('--url', 'http://h:1', '--token-file', '/t', 'inspect', 'a'), 'inspect');
    assert.equal(w('help', 'exec'), 'exec');
    assert.equal(w('--json', 'help', 'templates'), 'templates');
    assert.equal(w('template', 'ls'), 'template');
    assert.equal(w('--version'), undefined);
    assert.equal(w(), undefined);
    assert.equal(w('--', 'run'), undefined);
    assert.equal(findCommand('template')?.name, 'templates');
    assert.equal(findCommand('nope'), undefined);
  });
});
