/**
 * Test hosts for the egress proxy: one network namespace, joined to the host's root namespace by a veth
 * pair, on documentation addresses only (host side 198.51.100.1 and 203.0.113.1, the namespace
 * 198.51.100.2 and 203.0.113.2), running `python3 -m http.server` over a directory the test fills. Nothing here
 * routes anywhere else: the namespace has no default route, and the daemon's proxy is given names by
 * FORKBOX_EGRESS_HOSTS (no DNS). Not 192.0.2.0/24: machines of this kind use it for their own uplink
 * (eth0 192.0.2.2, gateway 192.0.2.1), and the test must not shadow either; startTestHosts refuses to
 * run when a range it uses is already on the host.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from './wait-for.ts';

export const HOST_SIDE = '198.51.100.1';
export const SERVER_A = '198.51.100.2';
export const SERVER_B = '203.0.113.2';
export const PORT = 8080;

export interface TestHosts {
  dir: string;
  /** Client addresses the server logged (who connected). */
  clients(): string[];
  close(): void;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });

export async function startTestHosts(): Promise<TestHosts> {
  const tag = randomBytes(3).toString('hex');
  const ns = `fbx-egress-${tag}`;
  const vh = `fbxh${tag}`;
  const vn = `fbxn${tag}`;
  const dir = mkdtempSync(join(tmpdir(), 'fbx-egress-'));
  let server: ChildProcess | undefined;
  const log: string[] = [];
  const close = () => {
    server?.kill('SIGKILL');
    try {
      ip('link', 'del', vh);
    } catch {
      // gone with the namespace
    }
    try {
      ip('netns', 'del', ns);
    } catch {
      // never made
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const taken = execFileSync('ip', ['-br', 'addr']).toString();
  if (/\b(198\.51\.100|203\.0\.113)\./.test(taken))
    throw new Error(`the host already uses 198.51.100.0/24 or 203.0.113.0/24:\n${taken}`);
  try {
    ip('netns', 'add', ns);
    ip('link', 'add', vh, 'type', 'veth', 'peer', 'name', vn);
    ip('link', 'set', vn, 'netns', ns);
    ip('addr', 'add', `${HOST_SIDE}/24`, 'dev', vh);
    ip('addr', 'add', '203.0.113.1/24', 'dev', vh);
    ip('link', 'set', vh, 'up');
    ip('-n', ns, 'addr', 'add', `${SERVER_A}/24`, 'dev', vn);
    ip('-n', ns, 'addr', 'add', `${SERVER_B}/24`, 'dev', vn);
    ip('-n', ns, 'link', 'set', vn, 'up');
    ip('-n', ns, 'link', 'set', 'lo', 'up');
    server = spawn(
      'ip',
      [
        'netns',
        'exec',
        ns,
        '/usr/bin/python3',
        '-m',
        'http.server',
        String(PORT),
        '--bind',
        '0.0.0.0',
        '--directory',
        dir,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    server.stderr?.on('data', (d: Buffer) =>
      log.push(
        ...d
          .toString()
          .split('\n')
          .filter((l) => l !== ''),
      ),
    );
    await waitFor(
      () => {
        try {
          execFileSync('curl', ['-s', '-o', '/dev/null', '--max-time', '2', `http://${SERVER_A}:${PORT}/`]);
          return true;
        } catch {
          return false;
        }
      },
      { timeoutMs: 20_000, what: 'the test HTTP server in its network namespace' },
    );
  } catch (e) {
    close();
    throw e;
  }
  return {
    dir,
    clients: () => log.map((l) => l.split(' ')[0] ?? '').filter((a) => a !== ''),
    close,
  };
}
