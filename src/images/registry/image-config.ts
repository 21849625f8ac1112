/** The parts of an OCI image config forkbox honours: Env, WorkingDir, User, Entrypoint, Cmd. */
import { ForkboxError } from '../../domain/errors.ts';
import { ENV_NAME_RE, SIZES } from '../../domain/limits.ts';

export interface ImageConfig {
  env: Record<string, string>;
  workingDir: string | null;
  user: string | null;
  entrypoint: string[] | null;
  cmd: string[] | null;
}

const strings = (v: unknown): string[] | null =>
  Array.isArray(v) && v.every((s) => typeof s === 'string') ? (v as string[]) : null;

export function parseImageConfig(bytes: Buffer, ref: string): ImageConfig {
  let doc: { config?: Record<string, unknown> | null };
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new ForkboxError('unavailable', `the config blob of ${ref} is not JSON; the image is corrupt.`, {
      ref,
    });
  }
  const c = (typeof doc === 'object' && doc !== null ? doc.config : null) ?? {};
  const env: Record<string, string> = {};
  for (const kv of strings(c.Env) ?? []) {
    const i = kv.indexOf('=');
    const name = i < 0 ? kv : kv.slice(0, i);
    // Names that a sandbox's env check would refuse are dropped rather than passed on.
    if (!ENV_NAME_RE.test(name) || name.length > SIZES.envNameChars) continue;
    if (Object.keys(env).length >= SIZES.envVars) break;
    env[name] = (i < 0 ? '' : kv.slice(i + 1)).slice(0, SIZES.envValueChars);
  }
  const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v.slice(0, SIZES.pathChars) : null);
  return {
    env,
    workingDir: str(c.WorkingDir),
    user: str(c.User),
    entrypoint: strings(c.Entrypoint),
    cmd: strings(c.Cmd),
  };
}
