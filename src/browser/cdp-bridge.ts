/**
 * The daemon's way to a browser's DevTools port inside a sandbox: a Unix socket in a directory only the
 * daemon's user can enter, whose every connection is joined to a connection the sandbox's agent makes to
 * the port on the sandbox's own loopback (the relay published ports use). Playwright connects to it with
 * a `ws+unix:` URL. No host TCP port is opened: nothing but the daemon reaches the browser.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { BROWSER } from '../domain/limits.ts';

export interface CdpBridge {
  /** For Playwright's connectOverCDP. */
  readonly url: string;
  close(): void;
}

export async function openCdpBridge(opts: {
  dir: string;
  /** The browser's WebSocket path. */
  path: string;
  dial(): Promise<Duplex>;
  onError?: (e: unknown) => void;
}): Promise<CdpBridge> {
  mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
  chmodSync(opts.dir, 0o700);
  const sock = join(opts.dir, `${randomBytes(8).toString('hex')}.sock`);
  const open = new Set<Socket | Duplex>();
  const server: Server = createServer((client) => {
    if (open.size >= BROWSER.connections * 2) {
      client.destroy();
      return;
    }
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    client.pause();
    opts.dial().then(
      (inner) => {
        open.add(inner);
        const end = () => {
          client.destroy();
          inner.destroy();
        };
        inner.on('close', () => {
          open.delete(inner);
          end();
        });
        inner.on('error', end);
        client.on('close', end);
        if (client.destroyed) return end();
        client.pipe(inner);
        inner.pipe(client);
        // What the browser sends reaches Playwright in the daemon: a connection sending more than the
        // budget in a window (a flood, or a frame built to be huge) is cut, which ends that browser.
        let window = Date.now();
        let bytes = 0;
        inner.on('data', (b: Buffer) => {
          if (Date.now() - window > BROWSER.relayWindowMs) {
            window = Date.now();
            bytes = 0;
          }
          bytes += b.length;
          if (bytes > BROWSER.relayWindowBytes) {
            opts.onError?.(
              new Error(
                `the browser sent over ${BROWSER.relayWindowBytes} bytes in ${BROWSER.relayWindowMs} ms`,
              ),
            );
            end();
          }
        });
        client.resume();
      },
      (e: unknown) => {
        opts.onError?.(e);
        client.destroy();
      },
    );
  });
  server.maxConnections = BROWSER.connections;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(sock, () => resolve());
  });
  chmodSync(sock, 0o600);
  return {
    url: `ws+unix://${sock}:${opts.path}`,
    close() {
      server.close();
      for (const s of open) s.destroy();
      rmSync(sock, { force: true });
    },
  };
}

/** Remove the relay sockets a daemon that died left in `dir` (a missing dir is nothing to sweep). */
export function sweepSockets(dir: string): void {
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const n of names) if (n.endsWith('.sock')) rmSync(join(dir, n), { force: true });
}
