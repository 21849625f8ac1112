/**
 * Attack (one local user against another, and against the host): two unprivileged users share a root
 * daemon through `forkbox serve --socket-group GROUP`; each tries to list, exec in, read and kill the
 * other's sandbox, to read the daemon's state dir, and to run host administration commands; a third
 * user outside the group tries to connect at all. Precedent: the Docker socket — membership of the
 * `docker` group is root on the host (CVE class: privilege escalation through a shared daemon socket),
 * and multi-user daemons that trusted a shared socket without per-peer scoping (CWE-639, authorization
 * bypass through a user-controlled key).
 *
 * Contained when: each user's CLI and stdio MCP server see only that user's sandboxes (tenant
 * uid-<uid>, from SO_PEERCRED), the other's are not found, the state dir cannot be listed and its files
 * not read, images/templates/gc answer permission_denied, root keeps the host tenant, and a user outside
 * the group cannot connect to the socket.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { createDaemonClient } from '../../src/transports/daemon-client.ts';
import { socketPathFor } from '../../src/transports/daemon-launcher.ts';
import { ROOT, type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';

const why = nativeUnavailable();
const tag = randomBytes(3).toString('hex');
const GROUP = `fbxg-${tag}`;
const USERS = { a: `fbxa-${tag}`, b: `fbxb-${tag}`, out: `fbxo-${tag}` } as const;

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

describe('abuse: local users through the group socket', { skip: why ?? false }, () => {
  let daemon: ServedDaemon | undefined;
  let stateDir: string;
  let sockDir: string;
  let sock: string;
  const uid: Record<string, number> = {};

  /** `forkbox ARGS` as USER through the group socket. */
  function cli(user: string, args: string[]): Run {
    const r = spawnSync(
      'runuser',
      [
        '-u',
        user,
        '--',
        'env',
        `FORKBOX_SOCKET=${sock}`,
        'HOME=/tmp',
        process.execPath,
        join(ROOT, 'bin/forkbox.js'),
        ...args,
      ],
      { cwd: ROOT, encoding: 'utf8', timeout: 60_000 },
    );
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  }
  const json = <T>(user: string, args: string[]): T => {
    const r = cli(user, ['--json', ...args]);
    assert.equal(r.status, 0, `${user} ${args.join(' ')}: ${r.stderr}`);
    return JSON.parse(r.stdout) as T;
  };

  before(async () => {
    execFileSync('groupadd', [GROUP]);
    for (const [k, name] of Object.entries(USERS)) {
      execFileSync('useradd', ['-M', '-s', '/usr/sbin/nologin', ...(k === 'out' ? [] : ['-G', GROUP]), name]);
      uid[k] = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim());
    }
    stateDir = makeStateDir();
    // The socket's parents must be root's and traversable (the daemon checks every one).
    sockDir = mkdtempSync('/tmp/fbx-sock-');
    chmodSync(sockDir, 0o755);
    sock = join(sockDir, 'run', 'forkbox.sock');
    daemon = await startServe(stateDir, ['--socket-group', GROUP, '--socket', sock]);
  });

  after(async () => {
    await stopServeAndClean(daemon?.child, stateDir);
    for (const name of Object.values(USERS)) spawnSync('userdel', [name]);
    spawnSync('groupdel', [GROUP]);
    rmSync(sockDir, { recursive: true, force: true });
  });

  it('binds the socket 0660 root:GROUP in a 0750 root:GROUP directory', () => {
    const gid = Number(execFileSync('getent', ['group', GROUP], { encoding: 'utf8' }).split(':')[2]);
    const s = statSync(sock);
    assert.ok(s.isSocket());
    assert.equal(s.mode & 0o777, 0o660);
    assert.deepEqual([s.uid, s.gid], [0, gid]);
    const d = statSync(join(sockDir, 'run'));
    assert.equal(d.mode & 0o777, 0o750);
    assert.deepEqual([d.uid, d.gid], [0, gid]);
  });

  it('each user sees only their own sandboxes; the other’s are not found', () => {
    const sa = json<{ id: string }>(USERS.a, ['create', '--name', 'mine']);
    const sb = json<{ id: string }>(USERS.b, ['create', '--name', 'mine']);
    const la = json<{ id: string; tenant?: string }[]>(USERS.a, ['ls']);
    const lb = json<{ id: string }[]>(USERS.b, ['ls']);
    assert.deepEqual(
      la.map((s) => s.id),
      [sa.id],
    );
    assert.deepEqual(
      lb.map((s) => s.id),
      [sb.id],
    );
    const r = json<{ stdout: string }>(USERS.a, ['exec', sa.id, '--', 'echo', 'hi']);
    assert.equal(r.stdout, 'hi\n');
    for (const args of [
      ['exec', sb.id, '--', 'id'],
      ['inspect', sb.id],
      ['cp', `${sb.id}:/etc/hostname`, '-'],
      ['kill', sb.id],
    ]) {
      const x = cli(USERS.a, ['--json', ...args]);
      assert.notEqual(x.status, 0, `${args.join(' ')} must fail`);
      assert.match(x.stderr, /not_found|not found/i, `${args.join(' ')}: ${x.stderr}`);
    }
    // B's sandbox is unharmed, and root (the host tenant) does not see the users' sandboxes.
    assert.equal(json<{ state: string }>(USERS.b, ['inspect', sb.id]).state, 'running');
  });

  it('root on the group socket is the host tenant', async () => {
    const api = createDaemonClient({ socketPath: sock });
    const host = createDaemonClient({ socketPath: socketPathFor(stateDir) });
    try {
      const users = json<{ id: string }[]>(USERS.a, ['ls']).map((s) => s.id);
      const viaGroup = (await api.listSandboxes()).map((s) => s.id);
      const viaHost = (await host.listSandboxes()).map((s) => s.id);
      assert.deepEqual(viaGroup.sort(), viaHost.sort());
      for (const id of users) assert.ok(!viaGroup.includes(id), 'users’ sandboxes are their own tenants');
      assert.ok((await api.listImages()).length >= 0, 'host administration works for root');
    } finally {
      api.close();
      host.close();
    }
  });

  it('host administration is refused to a user', () => {
    for (const args of [
      ['images', 'rm', 'debian'],
      ['gc'],
      ['templates', 'define', 'x', '--image', 'debian'],
    ]) {
      const x = cli(USERS.a, ['--json', ...args]);
      assert.notEqual(x.status, 0, `${args.join(' ')} must fail`);
      assert.match(x.stderr, /permission_denied|host administration/, `${args.join(' ')}: ${x.stderr}`);
    }
  });

  it('a user cannot list the state dir nor read its files', () => {
    for (const cmd of [
      ['ls', stateDir],
      ['cat', join(stateDir, 'audit.log')],
      ['cat', join(stateDir, 'forkbox.db')],
    ]) {
      const r = spawnSync('runuser', ['-u', USERS.a, '--', ...cmd], { encoding: 'utf8' });
      assert.notEqual(r.status, 0, `${cmd.join(' ')} must fail`);
      assert.match(r.stderr, /Permission denied/, cmd.join(' '));
    }
  });

  it('a user outside the group cannot connect, and is told what to ask for', () => {
    const r = cli(USERS.out, ['ls']);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /--socket-group/);
  });

  it('forkbox mcp over stdio, as each user: isolated both ways', async () => {
    const clients: Record<'a' | 'b', Client> = {} as never;
    for (const k of ['a', 'b'] as const) {
      const transport = new StdioClientTransport({
        command: 'runuser',
        args: [
          '-u',
          USERS[k],
          '--',
          process.execPath,
          join(ROOT, 'bin/forkbox.js'),
          'mcp',
          '--session-grace',
          '0',
        ],
        env: { FORKBOX_SOCKET: sock, HOME: '/tmp', PATH: process.env.PATH ?? '/usr/bin:/bin' },
        cwd: ROOT,
        stderr: 'pipe',
      });
      const c = new Client({ name: `group-${k}`, version: '1' });
      await c.connect(transport);
      clients[k] = c;
    }
    try {
      const call = async (k: 'a' | 'b', name: string, args: Record<string, unknown>) =>
        (await clients[k].callTool({ name, arguments: args })) as CallToolResult;
      const text = (r: CallToolResult) => r.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
      const created = await call('a', 'sandbox_create', { name: 'mcp-a' });
      assert.notEqual(created.isError, true, text(created));
      const id = (created.structuredContent as { id: string }).id;
      const r = await call('a', 'exec_run', { sandbox: id, command: 'id -u' });
      assert.notEqual(r.isError, true, text(r));
      const cliIds = json<{ id: string }[]>(USERS.a, ['ls']).map((s) => s.id);
      assert.ok(cliIds.includes(id), 'the MCP server acts as the same user as the CLI');
      const other = await call('b', 'exec_run', { sandbox: id, command: 'id' });
      assert.equal(other.isError, true);
      assert.match(text(other), /not_found|not found/i);
      const listB = json<{ id: string }[]>(USERS.b, ['ls']).map((s) => s.id);
      assert.ok(!listB.includes(id));
    } finally {
      await clients.a?.close();
      await clients.b?.close();
    }
  });
});
