/**
 * Bearer tokens for the TCP listener: a file of `TOKEN TENANT [NAMESPACES]` lines (`#` comments, blank
 * lines ignored). Each token maps to one tenant; a tenant sees and touches only its own sandboxes. A
 * third field (comma-separated namespace names) limits the token to those namespaces of its tenant: it
 * neither sees nor creates sandboxes elsewhere, and its first namespace is its default.
 *
 * Tokens are never kept or compared as plain strings: the store keeps their SHA-256 digests and compares
 * a presented token's digest against every entry with timingSafeEqual, without stopping at a match, so
 * response timing tells an attacker nothing about how much of a guess was right or which line matched.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { ForkboxError } from '../../domain/errors.ts';
import { SIZES } from '../../domain/limits.ts';
import { checkNamespace } from '../../domain/namespace.ts';

/** Shorter tokens are refused: a guessable token on a network listener is no protection. */
export const MIN_TOKEN_LENGTH = 16;
const TOKEN_RE = /^[\x21-\x7e]+$/;
/** Tenant names, for static tokens and OIDC tenant claims alike. */
export const TENANT_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

export interface TokenEntry {
  tenant: string;
  /** The namespaces it is limited to (absent: all of its tenant's). */
  namespaces?: readonly string[];
  digest: Buffer;
  /** A short, non-reversible id of the token (for keying per-token state; never logged). */
  principal: string;
}

export interface Caller {
  tenant: string;
  /** Stable per token ('anonymous' without tokens): keys the stateless MCP default sandbox. */
  principal: string;
  /** The namespaces the token is limited to (absent: every namespace of the tenant). */
  namespaces?: readonly string[];
}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** Parse a token file's text. Errors name the line (never its token) and say how to fix it. */
export function parseTokenFile(text: string, source = 'token file'): TokenEntry[] {
  const out: TokenEntry[] = [];
  const seen = new Set<string>();
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] ?? '').trim();
    if (line === '' || line.startsWith('#')) continue;
    const where = `${source} line ${i + 1}`;
    const fields = line.split(/\s+/);
    if (fields.length !== 2 && fields.length !== 3) {
      throw new ForkboxError(
        'invalid_argument',
        `${where}: expected 'TOKEN TENANT' or 'TOKEN TENANT NS1,NS2' (fields separated by spaces), found ${fields.length} field(s).`,
      );
    }
    const [token, tenant, nsField] = fields as [string, string, string | undefined];
    if (!TOKEN_RE.test(token) || token.length < MIN_TOKEN_LENGTH) {
      throw new ForkboxError(
        'invalid_argument',
        `${where}: tokens must be at least ${MIN_TOKEN_LENGTH} printable characters. Generate one with 'openssl rand -hex 32'.`,
      );
    }
    if (!TENANT_RE.test(tenant)) {
      throw new ForkboxError(
        'invalid_argument',
        `${where}: tenant '${tenant}' must be 1-63 letters, digits, '_', '.' or '-', starting with a letter or digit.`,
      );
    }
    const namespaces = nsField === undefined ? undefined : parseNamespaces(nsField, where);
    const digest = sha256(token);
    const hex = digest.toString('hex');
    if (seen.has(hex)) throw new ForkboxError('invalid_argument', `${where}: this token is listed twice.`);
    seen.add(hex);
    out.push({ tenant, digest, principal: `t-${hex.slice(0, 16)}`, ...(namespaces ? { namespaces } : {}) });
  }
  return out;
}

function parseNamespaces(field: string, where: string): string[] {
  const list = field.split(',');
  if (list.length > SIZES.tokenNamespaces) {
    throw new ForkboxError(
      'invalid_argument',
      `${where}: a token may be limited to at most ${SIZES.tokenNamespaces} namespaces (found ${list.length}).`,
    );
  }
  try {
    return [...new Set(list.map(checkNamespace))];
  } catch (e) {
    throw new ForkboxError('invalid_argument', `${where}: ${(e as Error).message}`);
  }
}

export interface TokenStore {
  /** The caller a presented token belongs to, or undefined. Constant time in the token's content. */
  lookup(token: string): Caller | undefined;
  /** Distinct tenants named in the file. */
  tenants(): string[];
  readonly size: number;
  /** Re-read the file (SIGHUP). On error the old tokens stay in force and the error is thrown. */
  reload(): void;
}

export function createTokenStore(initial: TokenEntry[], load?: () => TokenEntry[]): TokenStore {
  let entries = initial;
  return {
    lookup(token) {
      const d = sha256(token);
      let found: TokenEntry | undefined;
      // Scan every entry, even after a match (see the module comment).
      for (const e of entries) if (timingSafeEqual(d, e.digest) && !found) found = e;
      if (!found) return undefined;
      return {
        tenant: found.tenant,
        principal: found.principal,
        ...(found.namespaces ? { namespaces: found.namespaces } : {}),
      };
    },
    tenants: () => [...new Set(entries.map((e) => e.tenant))],
    get size() {
      return entries.length;
    },
    reload() {
      if (load) entries = load();
    },
  };
}

/** Load a token file. An empty file is an error: it would leave a network listener with no way in. */
export function loadTokenFile(path: string, warn?: (msg: string) => void): TokenStore {
  const read = () => {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (e) {
      throw new ForkboxError(
        'invalid_argument',
        `cannot read the token file ${path}: ${(e as Error).message}. Check --token-file / FORKBOX_TOKEN_FILE.`,
      );
    }
    const entries = parseTokenFile(text, path);
    if (entries.length === 0) {
      throw new ForkboxError(
        'invalid_argument',
        `the token file ${path} has no 'TOKEN TENANT' lines. Add at least one, e.g. "$(openssl rand -hex 32) alice".`,
      );
    }
    // Like ssh keys: a token file others can read is a leaked token file.
    if ((statSync(path).mode & 0o077) !== 0) {
      warn?.(`the token file ${path} is readable by group or others; chmod 600 it.`);
    }
    return entries;
  };
  return createTokenStore(read(), read);
}
