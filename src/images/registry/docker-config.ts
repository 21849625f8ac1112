/**
 * Registry credentials from Docker's config.json (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`):
 * `auths[host].auth` (base64 `user:password`) or `auths[host].username`/`password`. Credential helpers
 * (`credsStore`, `credHelpers`) are not run: forkbox does not execute programs a config file names.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface BasicCredentials {
  username: string;
  password: string;
}

function configPath(env: Readonly<Record<string, string | undefined>>): string {
  const dir = env.DOCKER_CONFIG ?? join(env.HOME ?? homedir(), '.docker');
  return join(dir, 'config.json');
}

/** The credentials config.json holds for `registry` (`host[:port]`), or null. */
export function credentialsFor(
  registry: string,
  env: Readonly<Record<string, string | undefined>>,
): BasicCredentials | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(configPath(env), 'utf8'));
  } catch {
    return null;
  }
  const auths = (parsed as { auths?: unknown }).auths;
  if (typeof auths !== 'object' || auths === null) return null;
  const table = auths as Record<string, unknown>;
  const entry = table[registry] ?? table[`https://${registry}`] ?? table[`http://${registry}`];
  if (typeof entry !== 'object' || entry === null) return null;
  const e = entry as { auth?: unknown; username?: unknown; password?: unknown };
  if (typeof e.auth === 'string') {
    const plain = Buffer.from(e.auth, 'base64').toString('utf8');
    const i = plain.indexOf(':');
    if (i > 0) return { username: plain.slice(0, i), password: plain.slice(i + 1) };
  }
  if (typeof e.username === 'string' && typeof e.password === 'string')
    return { username: e.username, password: e.password };
  return null;
}
