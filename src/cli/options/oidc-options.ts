/** `forkbox serve`'s OIDC options (flags, else environment), checked before the daemon starts. */
import type { Command } from 'commander';
import { ForkboxError } from '../../domain/errors.ts';
import { OIDC } from '../../domain/limits.ts';
import type { OidcSettings } from '../../protocol/http/oidc.ts';
import { checkOidcUrl } from '../../protocol/http/oidc-discovery.ts';
import { parseDuration } from '../parse.ts';

export interface OidcFlags {
  oidcIssuer?: string;
  oidcAudience?: string;
  oidcTenantClaim?: string;
  oidcClockSkew?: string;
  oidcJwksCooldown?: string;
}

const ENV = {
  oidcIssuer: 'FORKBOX_OIDC_ISSUER',
  oidcAudience: 'FORKBOX_OIDC_AUDIENCE',
  oidcTenantClaim: 'FORKBOX_OIDC_TENANT_CLAIM',
  oidcClockSkew: 'FORKBOX_OIDC_CLOCK_SKEW',
  oidcJwksCooldown: 'FORKBOX_OIDC_JWKS_COOLDOWN',
} as const;

const FLAG: Record<keyof OidcFlags, string> = {
  oidcIssuer: '--oidc-issuer',
  oidcAudience: '--oidc-audience',
  oidcTenantClaim: '--oidc-tenant-claim',
  oidcClockSkew: '--oidc-clock-skew',
  oidcJwksCooldown: '--oidc-jwks-cooldown',
};

/** Printable, at most 256 characters (an audience is often a URL or a URN). */
const AUDIENCE_RE = /^[\x21-\x7e]{1,256}$/;
/** A claim name: printable without quotes or backslashes (it appears in a WWW-Authenticate header). */
const CLAIM_RE = /^[\x21\x23-\x5b\x5d-\x7e]{1,128}$/;

/** A duration (or `0`) of `flag` in ms, from `minMs` to `maxMs`. */
function durationMs(text: string, flag: string, minMs: number, maxMs: number): number {
  const ms = text.trim() === '0' ? 0 : Math.round(parseDuration(text) * 1000);
  if (ms < minMs || ms > maxMs) {
    throw new ForkboxError(
      'invalid_argument',
      `${flag} must be from ${minMs === 0 ? '0' : `${minMs / 1000}s`} to ${maxMs / 1000}s (got '${text}').`,
    );
  }
  return ms;
}

/** The OIDC settings `serve` asks for, or undefined without an issuer. */
export function parseOidcOptions(
  flags: OidcFlags,
  env: Record<string, string | undefined> = process.env,
): OidcSettings | undefined {
  const get = (k: keyof OidcFlags) => flags[k] ?? (env[ENV[k]] || undefined);
  const issuer = get('oidcIssuer');
  if (issuer === undefined) {
    const stray = (Object.keys(FLAG) as (keyof OidcFlags)[]).find((k) => get(k) !== undefined);
    if (stray) {
      throw new ForkboxError(
        'invalid_argument',
        `${FLAG[stray]} (or ${ENV[stray]}) needs --oidc-issuer URL: without an issuer no JWT is accepted.`,
      );
    }
    return undefined;
  }
  checkOidcUrl(issuer, '--oidc-issuer');
  const audience = get('oidcAudience');
  if (audience === undefined || !AUDIENCE_RE.test(audience)) {
    throw new ForkboxError(
      'invalid_argument',
      `--oidc-issuer needs --oidc-audience AUD (or ${ENV.oidcAudience}): the audience this listener's tokens are issued for, 1-256 printable characters.`,
    );
  }
  const tenantClaim = get('oidcTenantClaim') ?? 'sub';
  if (!CLAIM_RE.test(tenantClaim)) {
    throw new ForkboxError(
      'invalid_argument',
      `--oidc-tenant-claim '${tenantClaim.slice(0, 40)}' must be a claim name of 1-128 printable characters without quotes or backslashes.`,
    );
  }
  const skew = get('oidcClockSkew');
  const cooldown = get('oidcJwksCooldown');
  return {
    issuer,
    audience,
    tenantClaim,
    clockSkewSeconds:
      skew === undefined
        ? OIDC.clockSkewSeconds
        : durationMs(skew, FLAG.oidcClockSkew, 0, OIDC.maxClockSkewSeconds * 1000) / 1000,
    jwksCooldownMs:
      cooldown === undefined
        ? OIDC.jwksCooldownMs
        : durationMs(cooldown, FLAG.oidcJwksCooldown, 1000, 3600_000),
  };
}

/** The options on `serve`. */
export function addOidcOptions(cmd: Command): Command {
  return cmd
    .option(
      '--oidc-issuer <url>',
      `also accept JWT bearer tokens from this OpenID Connect issuer (https, or http on loopback; env ${ENV.oidcIssuer})`,
    )
    .option('--oidc-audience <aud>', `the audience those tokens must name (env ${ENV.oidcAudience})`)
    .option(
      '--oidc-tenant-claim <claim>',
      `the claim whose value is the tenant (env ${ENV.oidcTenantClaim}; default sub)`,
    )
    .option(
      '--oidc-clock-skew <duration>',
      `clock skew allowed on exp and nbf, at most ${OIDC.maxClockSkewSeconds / 60}m (env ${ENV.oidcClockSkew}; default ${OIDC.clockSkewSeconds}s)`,
    )
    .option(
      '--oidc-jwks-cooldown <duration>',
      `after fetching the issuer's keys, an unknown key id fetches them again only after this, 1s-1h (env ${ENV.oidcJwksCooldown}; default ${OIDC.jwksCooldownMs / 1000}s)`,
    );
}
