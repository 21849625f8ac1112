/**
 * The layer rules of docs/ARCHITECTURE.md, enforced: every relative import in src/ must point at the
 * importing layer itself or at a layer it may depend on. Dependencies point inward (cli, transports,
 * protocol → service → domain); runtimes, storage and images implement the service's ports.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

/** What the composition root may import: every layer but the CLI. */
const COMPOSITION: readonly string[] = [
  'domain',
  'service',
  'protocol',
  'transports',
  'runtimes',
  'images',
  'storage',
  'network',
  'browser',
  'util',
  'version',
];

/** Layer → the layers it may import (besides itself). */
const ALLOWED: Record<string, readonly string[]> = {
  util: ['domain'],
  domain: [],
  service: ['domain', 'util'],
  storage: ['domain', 'service', 'util'],
  images: ['domain', 'service', 'util'],
  runtimes: ['domain', 'service', 'images', 'network', 'util'],
  network: ['domain', 'util'],
  browser: ['domain', 'service', 'util'],
  protocol: ['domain', 'service', 'util'],
  transports: ['domain', 'service', 'protocol', 'util'],
  cli: [...COMPOSITION, 'composition'],
  composition: COMPOSITION,
  version: [],
};

/** Inside runtimes/native: folder → the sibling folders it may import. */
const NATIVE_ALLOWED: Record<string, readonly string[]> = {
  host: [],
  cgroups: ['host'],
  storage: ['host'],
  'agent-link': ['host', 'cgroups'],
  container: ['host', 'agent-link'],
  spawn: ['host', 'cgroups', 'storage', 'agent-link', 'container'],
  '.': ['host', 'cgroups', 'storage', 'agent-link', 'container', 'spawn'],
};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) return files(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

const layerOf = (p: string): string => {
  const first = relative(SRC, p).split('/')[0] ?? '';
  return first.replace(/\.ts$/, '');
};

const nativeFolder = (p: string): string | null => {
  const rel = relative(join(SRC, 'runtimes/native'), p);
  if (rel.startsWith('..')) return null;
  const parts = rel.split('/');
  return parts.length === 1 ? '.' : (parts[0] ?? '.');
};

function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) =>
    resolve(dirname(file), m[1] ?? ''),
  );
}

test('every import in src/ respects the layer rules', () => {
  const violations: string[] = [];
  for (const file of files(SRC)) {
    const from = layerOf(file);
    const allowed = ALLOWED[from];
    assert.ok(allowed, `unknown layer '${from}' (${relative(SRC, file)}): add it to the rules`);
    for (const target of imports(file)) {
      const to = layerOf(target);
      if (to !== from && !allowed.includes(to))
        violations.push(`${relative(SRC, file)} → ${relative(SRC, target)} (${from} may not import ${to})`);
      const nf = nativeFolder(file);
      const nt = nativeFolder(target);
      if (nf !== null && nt !== null && nf !== nt && !(NATIVE_ALLOWED[nf] ?? []).includes(nt))
        violations.push(
          `${relative(SRC, file)} → ${relative(SRC, target)} (native/${nf} may not import ${nt})`,
        );
    }
  }
  assert.deepEqual(violations, []);
});

test('the rules catch a violation', () => {
  // The checker itself must be able to fail: an import from service into protocol is one.
  const from = layerOf(join(SRC, 'service/engine.ts'));
  const to = layerOf(join(SRC, 'protocol/mcp/server.ts'));
  assert.equal(ALLOWED[from]?.includes(to), false);
});
