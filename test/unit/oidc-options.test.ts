/**
 * `forkbox serve`'s OIDC options: what is accepted (flags, else environment), the defaults, and the
 * refusals before the daemon starts (plain http off loopback, a missing audience, a skew past the cap,
 * options without an issuer, a claim name that could break the WWW-Authenticate header).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseOidcOptions } from '../../src/cli/options/oidc-options.ts';
import { OIDC } from '../../src/domain/limits.ts';
import { checkListenSecurity } from '../../src/transports/http-listener.ts';

const ISSUER = 'https://id.example.test';

describe('serve --oidc-* options', () => {
  it('no issuer: no OIDC', () => {
    assert.equal(parseOidcOptions({}, {}), undefined);
  });

  it('issuer and audience: the defaults for the rest', () => {
    assert.deepEqual(parseOidcOptions({ oidcIssuer: ISSUER, oidcAudience: 'forkbox' }, {}), {
      issuer: ISSUER,
      audience: 'forkbox',
      tenantClaim: 'sub',
      clockSkewSeconds: OIDC.clockSkewSeconds,
      jwksCooldownMs: OIDC.jwksCooldownMs,
    });
  });

  it('every option, and the environment when a flag is absent', () => {
    const s = parseOidcOptions(
      { oidcAudience: 'urn:forkbox:api', oidcClockSkew: '0' },
      {
        FORKBOX_OIDC_ISSUER: 'http://127.0.0.1:9000/realms/x',
        FORKBOX_OIDC_AUDIENCE: 'ignored: the flag wins',
        FORKBOX_OIDC_TENANT_CLAIM: 'https://forkbox.test/tenant',
        FORKBOX_OIDC_JWKS_COOLDOWN: '2s',
      },
    );
    assert.deepEqual(s, {
      issuer: 'http://127.0.0.1:9000/realms/x',
      audience: 'urn:forkbox:api',
      tenantClaim: 'https://forkbox.test/tenant',
      clockSkewSeconds: 0,
      jwksCooldownMs: 2000,
    });
    assert.equal(
      parseOidcOptions({ oidcIssuer: ISSUER, oidcAudience: 'a', oidcClockSkew: '5m' }, {})?.clockSkewSeconds,
      300,
    );
  });

  it('plain http only to loopback; no credentials, query or fragment; not a URL', () => {
    for (const issuer of [
      'http://id.example.test',
      'http://10.0.0.1:8080',
      'ftp://127.0.0.1',
      'https://user:pw@id.example.test',
      'https://id.example.test/?x=1',
      'https://id.example.test/#f',
      'id.example.test',
    ]) {
      assert.throws(
        () => parseOidcOptions({ oidcIssuer: issuer, oidcAudience: 'a' }, {}),
        (e: Error & { code?: string }) => e.code === 'invalid_argument' && /--oidc-issuer/.test(e.message),
        issuer,
      );
    }
    for (const issuer of ['http://localhost:8080', 'http://[::1]:1', 'http://127.0.0.2']) {
      assert.equal(parseOidcOptions({ oidcIssuer: issuer, oidcAudience: 'a' }, {})?.issuer, issuer);
    }
  });

  it('an issuer needs an audience; the other options need an issuer', () => {
    assert.throws(() => parseOidcOptions({ oidcIssuer: ISSUER }, {}), /--oidc-audience/);
    assert.throws(() => parseOidcOptions({ oidcIssuer: ISSUER, oidcAudience: 'two words' }, {}), /audience/);
    assert.throws(() => parseOidcOptions({ oidcAudience: 'a' }, {}), /--oidc-audience .*needs --oidc-issuer/);
    assert.throws(
      () => parseOidcOptions({}, { FORKBOX_OIDC_CLOCK_SKEW: '10s' }),
      /--oidc-clock-skew \(or FORKBOX_OIDC_CLOCK_SKEW\) needs --oidc-issuer/,
    );
  });

  it('the clock skew is capped; the cooldown is 1s-1h; durations must parse', () => {
    const base = { oidcIssuer: ISSUER, oidcAudience: 'a' };
    assert.throws(() => parseOidcOptions({ ...base, oidcClockSkew: '301s' }, {}), /from 0 to 300s/);
    assert.throws(() => parseOidcOptions({ ...base, oidcClockSkew: 'soon' }, {}), /not a duration/);
    assert.throws(() => parseOidcOptions({ ...base, oidcJwksCooldown: '0' }, {}), /from 1s to 3600s/);
    assert.throws(() => parseOidcOptions({ ...base, oidcJwksCooldown: '2h' }, {}), /from 1s to 3600s/);
  });

  it('a tenant claim name with a quote, a backslash or a space is refused', () => {
    for (const claim of ['a"b', 'a\\b', 'a b', '', 'x'.repeat(129)]) {
      assert.throws(
        () => parseOidcOptions({ oidcIssuer: ISSUER, oidcAudience: 'a', oidcTenantClaim: claim }, {}),
        /--oidc-tenant-claim/,
      );
    }
  });

  it('an OIDC issuer is authentication enough for a non-loopback listener', () => {
    const oidc = parseOidcOptions({ oidcIssuer: ISSUER, oidcAudience: 'a' }, {});
    assert.doesNotThrow(() => checkListenSecurity('0.0.0.0', undefined, oidc));
    assert.throws(() => checkListenSecurity('0.0.0.0', undefined, undefined), /--oidc-issuer/);
  });
});
