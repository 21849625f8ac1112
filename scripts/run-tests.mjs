#!/usr/bin/env node
// Runs node:test through tsx with an explicit file list (Node 20's test runner takes no globs).
// Usage: node scripts/run-tests.mjs unit|integration|all [extra node --test args]
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const which = process.argv[2] ?? 'all';
const dirs = which === 'all' ? ['test/unit', 'test/integration'] : [`test/${which}`];

function collect(dir) {
  let out = [];
  let entries;
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries.sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out = out.concat(collect(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const files = dirs.flatMap(collect);
if (files.length === 0) {
  console.error(`no test files under ${dirs.join(', ')}`);
  process.exit(1);
}
const args = ['--import', 'tsx', '--test', '--test-concurrency=1', ...process.argv.slice(3), ...files];
const r = spawnSync(process.execPath, args, { stdio: 'inherit' });
process.exit(r.status ?? 1);
