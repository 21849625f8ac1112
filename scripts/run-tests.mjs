#!/usr/bin/env node
// Runs node:test through tsx with explicit file lists (Node 20's test runner takes no globs), in kinds:
//   unit         test/unit               (no root, seconds)
//   integration  test/integration        (the real native runtime, real daemons and clients)
//   abuse        test/abuse              (attacks that must be contained; one file per attack)
//   clients      test/clients            (third-party MCP clients against a real daemon)
//   native-copy  test/integration/native-*.test.ts again with FORKBOX_STORAGE=copy
// Usage: node scripts/run-tests.mjs unit|integration|abuse|clients|native-copy|all [extra node --test args]
//
// A skipped test or suite is a failure when running as root (CI runs as root on the machine kind the
// project targets, where every test can run) or when FORKBOX_FAIL_ON_SKIP=1; FORKBOX_FAIL_ON_SKIP=0
// allows them. Every skip is listed with its reason either way.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const KINDS = {
  unit: { dirs: ['test/unit'] },
  integration: { dirs: ['test/integration'] },
  abuse: { dirs: ['test/abuse'] },
  // Client files run side by side: each starts its own daemon on its own state dir, and most of their time
  // is the silent 90 s calls (progress keep-alive), which wait rather than work: four at a time.
  clients: { dirs: ['test/clients'], concurrency: 4 },
  'native-copy': {
    dirs: ['test/integration'],
    filter: (f) => /\/native-[^/]+\.test\.ts$/.test(f),
    // The copy driver promises each sandbox's disk image in full (docs/STORAGE.md): at the 10 GiB default a
    // fork of 20 asks for 200 GiB, more than a test machine has free. These tests are about forks, not disk
    // admission (test/integration/full-disk.test.ts runs that at the default of 1), so promise 16 times over.
    env: { FORKBOX_STORAGE: 'copy', FORKBOX_DISK_OVERCOMMIT: '16' },
  },
};
const ORDER = ['unit', 'integration', 'abuse', 'clients', 'native-copy'];
/** Minutes a kind may take in all (the whole suite takes about 12 on a 2-core machine). */
const KIND_DEADLINE_MIN = 25;

const which = process.argv[2] ?? 'all';
const extra = process.argv.slice(3);
const kinds = which === 'all' ? ORDER : [which];
for (const k of kinds) {
  if (!KINDS[k]) {
    console.error(`unknown test kind '${k}': one of ${ORDER.join(', ')}, all`);
    process.exit(2);
  }
}
const failOnSkip =
  process.env.FORKBOX_FAIL_ON_SKIP === '1' ||
  (process.env.FORKBOX_FAIL_ON_SKIP !== '0' && process.getuid?.() === 0);

function collect(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) return collect(p);
      return name.endsWith('.test.ts') ? [p] : [];
    });
}

const scratch = mkdtempSync(join(tmpdir(), 'forkbox-tests-'));
const rows = [];
let status = 0;
for (const kind of kinds) {
  const spec = KINDS[kind];
  const files = spec.dirs.flatMap(collect).filter(spec.filter ?? (() => true));
  if (files.length === 0) {
    // A kind asked for by name must have tests; in `all`, an empty kind is reported and skipped.
    if (which !== 'all') {
      console.error(`no test files for '${kind}' under ${spec.dirs.join(', ')}`);
      status = 1;
    }
    rows.push({ kind, files: 0, pass: 0, fail: 0, skipped: [], failed: [], suitesFailed: 0 });
    continue;
  }
  const tallyFile = join(scratch, `${kind}.json`);
  const args = [
    '--import',
    'tsx',
    '--test',
    `--test-concurrency=${spec.concurrency ?? 1}`,
    // A test stuck past 10 minutes fails instead of holding CI until its deadline.
    '--test-timeout=600000',
    '--test-reporter=tap',
    '--test-reporter-destination=stdout',
    `--test-reporter=${new URL('./test-tally.mjs', import.meta.url).pathname}`,
    `--test-reporter-destination=${join(scratch, `${kind}.out`)}`,
    ...extra,
    ...files,
  ];
  console.log(
    `# ── ${kind}: ${files.length} files${
      spec.env
        ? ` (${Object.entries(spec.env)
            .map(([k, v]) => `${k}=${v}`)
            .join(' ')})`
        : ''
    }`,
  );
  // A test file that never exits (a timer or socket left open after its tests) would stall the run:
  // a kind gets KIND_DEADLINE_MIN minutes in all, then fails.
  const r = spawnSync(process.execPath, args, {
    stdio: 'inherit',
    env: { ...process.env, ...(spec.env ?? {}), FORKBOX_TEST_TALLY: tallyFile },
    timeout: KIND_DEADLINE_MIN * 60_000,
    killSignal: 'SIGKILL',
  });
  let t;
  try {
    t = JSON.parse(readFileSync(tallyFile, 'utf8'));
  } catch {
    const why =
      r.error?.code === 'ETIMEDOUT'
        ? `(killed after ${KIND_DEADLINE_MIN} minutes: a test file did not exit; the last one started above hung)`
        : '(the test run wrote no tally: it crashed)';
    t = { pass: 0, fail: 0, skipped: [], failed: [why], suitesFailed: 1 };
  }
  rows.push({ kind, files: files.length, ...t });
  // Nothing counted is a failure even when node exited 0.
  if (r.status !== 0 || t.failed.length > 0 || t.pass === 0) status = 1;
}
rmSync(scratch, { recursive: true, force: true });

const total = (k) => rows.reduce((a, r) => a + (Array.isArray(r[k]) ? r[k].length : r[k]), 0);
console.log('\n# ── summary');
console.log(
  `# ${'kind'.padEnd(12)} ${'files'.padStart(5)} ${'pass'.padStart(5)} ${'fail'.padStart(5)} ${'skip'.padStart(5)}`,
);
for (const r of rows) {
  console.log(
    `# ${r.kind.padEnd(12)} ${String(r.files).padStart(5)} ${String(r.pass).padStart(5)} ${String(r.fail + r.suitesFailed).padStart(5)} ${String(r.skipped.length).padStart(5)}`,
  );
}
for (const r of rows) for (const f of r.failed) console.log(`# FAILED  [${r.kind}] ${f}`);
for (const r of rows) for (const s of r.skipped) console.log(`# SKIPPED [${r.kind}] ${s.what}: ${s.reason}`);
const skips = total('skipped');
if (skips > 0 && failOnSkip) {
  console.log(
    `# ${skips} skipped: a skip is a failure here (root or FORKBOX_FAIL_ON_SKIP=1); fix what each reason names`,
  );
  status = 1;
}
console.log(`# tests ${total('pass') + total('fail') + skips}`);
console.log(`# pass ${total('pass')}`);
console.log(`# fail ${total('fail') + total('suitesFailed')}`);
console.log(`# skipped ${skips}`);
process.exit(status);
