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

/**
 * Inside a layer, its folders by concern: folder → the sibling folders it may import ('.' is the files at
 * the folder's top: the wiring, the ports and shared types, which every folder may import).
 */
const FOLDER_RULES: Record<string, Record<string, readonly string[]>> = {
  // The gvisor runtime serves its sandboxes over the native runtime's agent link, host calls and cgroups;
  // the native runtime knows nothing of it; the router (`.`) knows only the port.
  runtimes: {
    native: [],
    gvisor: ['native'],
    '.': [],
  },
  'runtimes/native': {
    host: [],
    cgroups: ['host'],
    layers: ['host'],
    'agent-link': ['host', 'cgroups'],
    container: ['host', 'agent-link'],
    spawn: ['host', 'cgroups', 'layers', 'agent-link', 'container'],
    '.': ['host', 'cgroups', 'layers', 'agent-link', 'container', 'spawn'],
  },
  service: {
    execs: ['.'],
    diff: ['.'],
    sandboxes: ['.'],
    browser: ['.', 'execs'],
    snapshots: ['.', 'sandboxes'],
    lineage: ['.', 'sandboxes', 'snapshots'],
    '.': ['execs', 'diff', 'sandboxes', 'browser', 'snapshots', 'lineage'],
  },
  'protocol/console': {
    auth: ['.'],
    pages: ['.'],
    '.': ['auth', 'pages'],
  },
  cli: {
    options: ['.'],
    output: [],
    commands: ['.', 'options', 'output'],
    '.': ['commands', 'output'],
  },
  'protocol/mcp': {
    kit: ['.'],
    conformance: [],
    tools: ['kit'],
    toolsets: ['.', 'kit'],
    http: ['.', 'conformance', 'kit'],
    '.': ['kit', 'conformance', 'tools', 'toolsets'],
  },
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

/** The folder of `p` inside `base` ('.' for a file at its top), or null when `p` is not inside it. */
const folderIn = (base: string, p: string): string | null => {
  const rel = relative(join(SRC, base), p);
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
      for (const [base, rules] of Object.entries(FOLDER_RULES)) {
        const ff = folderIn(base, file);
        const ft = folderIn(base, target);
        if (ff === null || ft === null || ff === ft) continue;
        const may = rules[ff];
        if (may === undefined)
          violations.push(`${relative(SRC, file)}: folder ${base}/${ff} has no rule here: add it`);
        else if (!may.includes(ft))
          violations.push(
            `${relative(SRC, file)} → ${relative(SRC, target)} (${base}/${ff} may not import ${ft})`,
          );
      }
    }
  }
  assert.deepEqual(violations, []);
});

test('the rules catch a violation', () => {
  // The checker itself must be able to fail: an import from service into protocol is one, and so is one
  // from the exec folder into the lineage folder.
  const from = layerOf(join(SRC, 'service/engine.ts'));
  const to = layerOf(join(SRC, 'protocol/mcp/server.ts'));
  assert.equal(ALLOWED[from]?.includes(to), false);
  const execs = folderIn('service', join(SRC, 'service/execs/exec-manager.ts'));
  const lineage = folderIn('service', join(SRC, 'service/lineage/lineage-fork.ts'));
  assert.equal(execs, 'execs');
  assert.equal(FOLDER_RULES.service?.[execs]?.includes(lineage ?? ''), false);
});

/** Folders of one file per MCP tool or CLI command: as long as the list of tools or commands. */
const ONE_PER_FILE = /^(protocol\/mcp\/tools|protocol\/mcp\/toolsets\/[^/]+|cli\/commands)$/;

test('no folder of src/ holds more than 16 files of its own (one per tool or command aside)', () => {
  const crowded: string[] = [];
  const walk = (dir: string) => {
    const entries = readdirSync(dir, { withFileTypes: true });
    const own = entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).length;
    if (own > 16 && !ONE_PER_FILE.test(relative(SRC, dir)))
      crowded.push(`${relative(SRC, dir) || 'src'}: ${own}`);
    for (const e of entries) if (e.isDirectory()) walk(join(dir, e.name));
  };
  walk(SRC);
  assert.deepEqual(crowded, []);
});
