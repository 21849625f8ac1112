/**
 * JWT bearer tokens from one OpenID Connect issuer, beside the static token file. A token is accepted
 * when, with jose's jwtVerify:
 *
 * - its signature verifies with a key of the issuer's JWKS (discovered from the issuer; fetched with a
 *   deadline and a size bound, cached, and fetched again for an unknown `kid` at most once per cooldown,
 *   so a rotated-in key works without a restart and made-up kids cannot flood the issuer);
 * - its algorithm is asymmetric (never `none`, never HS*: a shared-secret algorithm would let anyone
 *   holding the public key sign);
 * - `iss` is the configured issuer, `aud` holds the configured audience, `exp` is present and not past,
 *   `nbf` (if any) not future, both with the configured clock skew (at most OIDC.maxClockSkewSeconds);
 * - the tenant claim is a string that is a valid tenant name.
 *
 * A refusal is `unauthenticated` with a short, fixed reason (details.reason) safe to show the caller;
 * the issuer being unreachable is `unavailable` (the token may be fine: try again).
 */
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, customFetch, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { ForkboxError } from '../../domain/errors.ts';
import { OIDC } from '../../domain/limits.ts';
import { boundedFetch, discover } from './oidc-discovery.ts';
import { type Caller, TENANT_RE } from './tokens.ts';

export interface OidcSettings {
  /** Exactly as the issuer names itself (checked against discovery). */
  issuer: string;
  audience: string;
  /** The claim whose value is the tenant (default `sub`). */
  tenantClaim: string;
  clockSkewSeconds: number;
  /** See OIDC.jwksCooldownMs. */
  jwksCooldownMs: number;
}

/** Asymmetric JWS algorithms: the only ones accepted. */
export const OIDC_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];

/** Three base64url segments, the first a JSON object (`{"` is `eyJ`): what is verified as a JWT. */
export function looksLikeJwt(token: string): boolean {
  return /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}

export interface OidcVerifier {
  readonly settings: OidcSettings;
  /** Discovery and the first JWKS fetch. Rejects (`unavailable`) saying why; later calls retry. */
  start(): Promise<void>;
  /** The caller a JWT stands for; throws `unauthenticated` (details.reason) or `unavailable`. */
  verify(token: string): Promise<Caller>;
}

export const refused = (reason: string) =>
  new ForkboxError(
    'unauthenticated',
    `the bearer token was refused: ${reason}. Get a new token from the issuer, or use one from the token file.`,
    { reason },
  );

const issuerDown = () =>
  new ForkboxError(
    'unavailable',
    "the token issuer's keys cannot be fetched right now, so the token cannot be checked. Try again shortly.",
  );

/** Errors of key lookup that are about the token (its kid or alg), not about fetching the keys. */
const TOKEN_KEY_ERRORS = new Set([
  'ERR_JWKS_NO_MATCHING_KEY',
  'ERR_JWKS_MULTIPLE_MATCHING_KEYS',
  'ERR_JOSE_NOT_SUPPORTED',
  'ERR_JOSE_ALG_NOT_ALLOWED',
]);

/** jose's error → the fixed reason told to the caller. */
function reasonOf(e: { code?: unknown; claim?: unknown }): string {
  switch (e.code) {
    case 'ERR_JWT_EXPIRED':
      return 'it has expired';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (e.claim === 'nbf') return 'it is not valid yet';
      if (e.claim === 'iss') return 'it is from another issuer';
      if (e.claim === 'aud') return 'it is for another audience';
      return 'it lacks a required claim';
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return 'its algorithm is not accepted';
    case 'ERR_JWKS_NO_MATCHING_KEY':
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return "its signature does not verify with the issuer's keys";
    default:
      return 'it is not a valid JWT';
  }
}

export function createOidcVerifier(s: OidcSettings): OidcVerifier {
  let keys: JWTVerifyGetKey | undefined;
  let starting: Promise<void> | undefined;
  let lastAttempt = Number.NEGATIVE_INFINITY;

  const start = () => {
    starting ??= (async () => {
      lastAttempt = Date.now();
      const { jwksUri } = await discover(s.issuer);
      const remote = createRemoteJWKSet(jwksUri, {
        timeoutDuration: OIDC.fetchMs,
        cooldownDuration: s.jwksCooldownMs,
        cacheMaxAge: OIDC.jwksMaxAgeMs,
        [customFetch]: boundedFetch(OIDC.documentBytes),
      });
      await remote.reload();
      keys = async (header, token) => {
        try {
          return await remote(header, token);
        } catch (e) {
          if (TOKEN_KEY_ERRORS.has((e as { code?: string }).code ?? '')) throw e;
          throw issuerDown();
        }
      };
    })().finally(() => {
      starting = undefined;
    });
    return starting;
  };

  return {
    settings: s,
    start,
    async verify(token) {
      if (Buffer.byteLength(token) > OIDC.tokenBytes) throw refused('it is too long');
      if (!keys) {
        // Discovery failed before: retry, at most once per cooldown, while callers wait for it.
        if (!starting && Date.now() - lastAttempt < s.jwksCooldownMs) throw issuerDown();
        await start().catch(() => {
          throw issuerDown();
        });
      }
      const getKey = keys as JWTVerifyGetKey;
      let payload: Record<string, unknown>;
      try {
        ({ payload } = await jwtVerify(token, getKey, {
          issuer: s.issuer,
          audience: s.audience,
          algorithms: OIDC_ALGORITHMS,
          clockTolerance: s.clockSkewSeconds,
          requiredClaims: ['exp'],
        }));
      } catch (e) {
        if (e instanceof ForkboxError) throw e;
        throw refused(reasonOf(e as { code?: unknown }));
      }
      const tenant = payload[s.tenantClaim];
      if (typeof tenant !== 'string' || !TENANT_RE.test(tenant)) {
        throw refused(`its '${s.tenantClaim}' claim is missing or not a valid tenant name`);
      }
      const sub = typeof payload.sub === 'string' ? payload.sub : '';
      const id = createHash('sha256').update(`${s.issuer}\n${tenant}\n${sub}`).digest('hex');
      return { tenant, principal: `o-${id.slice(0, 16)}` };
    },
  };
}
