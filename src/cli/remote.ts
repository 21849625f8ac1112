/**
 * Remote mode of the CLI: `--url URL` (or FORKBOX_URL) sends every command to the TCP listener of a
 * `forkbox serve --listen …` instead of the local daemon's socket. The bearer token comes from
 * FORKBOX_TOKEN or `--token-file FILE` — never from an argv value, which every local user can read in
 * `ps` / /proc/PID/cmdline.
 */
import { readFileSync } from 'node:fs';
import { ForkboxError } from '../domain/errors.ts';
import { checkToken, parseDaemonUrl } from '../transports/daemon-endpoint.ts';

export interface RemoteTarget {
  url: URL;
  token: string | undefined;
}

export interface RemoteFlags {
  url?: string | undefined;
  tokenFile?: string | undefined;
}

/** The token in FILE: its first line, trimmed (so `echo TOKEN > FILE` works). */
export function readTokenFile(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new ForkboxError(
      code === 'ENOENT' ? 'not_found' : 'permission_denied',
      `cannot read the token file ${path} (${code ?? (e as Error).message}). It must hold the bearer token on its first line.`,
      { path },
    );
  }
  return checkToken(text.split('\n', 1)[0] ?? '', `the token file ${path}`);
}

/**
 * The remote daemon to use, or undefined for the local one. `--url` wins over FORKBOX_URL, and
 * `--token-file` over FORKBOX_TOKEN; an empty FORKBOX_URL counts as unset.
 */
export function resolveRemote(
  flags: RemoteFlags,
  env: NodeJS.ProcessEnv = process.env,
): RemoteTarget | undefined {
  const raw = flags.url ?? (env.FORKBOX_URL || undefined);
  if (raw === undefined) {
    if (flags.tokenFile !== undefined) {
      throw new ForkboxError(
        'invalid_argument',
        '--token-file is the token for a remote daemon: give its address with --url URL (or FORKBOX_URL) too.',
      );
    }
    return undefined;
  }
  const url = parseDaemonUrl(raw);
  let token: string | undefined;
  if (flags.tokenFile !== undefined) token = readTokenFile(flags.tokenFile);
  else if (env.FORKBOX_TOKEN) token = checkToken(env.FORKBOX_TOKEN, 'FORKBOX_TOKEN');
  return { url, token };
}
