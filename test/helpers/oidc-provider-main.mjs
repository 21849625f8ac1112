/**
 * A real OpenID Connect provider (the oidc-provider package) for the OIDC tests, run as a child process
 * under Node 22 by test/helpers/oidc-provider.ts. It listens on 127.0.0.1 (port from argv, 0 = random)
 * and issues JWT access tokens by the client_credentials grant; the resource indicator picks what the
 * token is like:
 *
 *   urn:forkbox:api          audience urn:forkbox:api, 5 minutes, RS256
 *   urn:forkbox:api:es256    audience urn:forkbox:api, 5 minutes, ES256
 *   urn:forkbox:api:short    audience urn:forkbox:api, 1 second (to see it expire)
 *   urn:other:api            audience urn:other:api
 *
 * Clients: `<name>` with secret `<name>-secret-0123456789`; each token carries `tenant: <name>` unless the
 * client is named `no-tenant`. Keys (a private JWKS) come as JSON on stdin's first line; each further
 * line is a new key set that replaces the old one (key rotation: the old kids leave the JWKS). Each
 * change is acknowledged by one JSON line on stdout.
 */
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import Provider from 'oidc-provider';

const port = Number(process.argv[2] ?? '0');
const clientNames = (process.argv[3] ?? 'alice,bob,no-tenant').split(',');

const RESOURCES = {
  'urn:forkbox:api': { audience: 'urn:forkbox:api', ttl: 300, alg: 'RS256' },
  'urn:forkbox:api:es256': { audience: 'urn:forkbox:api', ttl: 300, alg: 'ES256' },
  'urn:forkbox:api:short': { audience: 'urn:forkbox:api', ttl: 1, alg: 'RS256' },
  'urn:other:api': { audience: 'urn:other:api', ttl: 300, alg: 'RS256' },
};

let current;
const server = createServer((req, res) => {
  if (!current) {
    res.statusCode = 503;
    res.end();
    return;
  }
  current(req, res);
});
await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

function makeProvider(jwks) {
  const provider = new Provider(issuer, {
    jwks,
    clients: clientNames.map((name) => ({
      client_id: name,
      client_secret: `${name}-secret-0123456789`,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_post',
    })),
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => 'urn:forkbox:api',
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => {
          const r = RESOURCES[resource];
          if (!r) throw new Provider.errors.InvalidTarget();
          return {
            scope: 'sandboxes',
            audience: r.audience,
            accessTokenTTL: r.ttl,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: r.alg } },
          };
        },
      },
    },
    extraTokenClaims: (_ctx, token) =>
      token.clientId === 'no-tenant' ? undefined : { tenant: token.clientId },
  });
  return provider.callback();
}

const lines = createInterface({ input: process.stdin });
let changes = 0;
lines.on('line', (line) => {
  try {
    current = makeProvider(JSON.parse(line));
    changes++;
    process.stdout.write(`${JSON.stringify({ issuer, keysets: changes })}\n`);
  } catch (e) {
    process.stdout.write(`${JSON.stringify({ error: String(e?.stack ?? e) })}\n`);
  }
});
lines.on('close', () => server.close());
