/**
 * Attack: stall the daemon with diffs. Precedent: issue #22 item 4 — a sandbox with 400k empty files and
 * 14 concurrent `POST /v1/sandboxes/diff` left `/healthz` unanswered for 62 s; every tenant waited.
 * Contained when, while tenant A diffs its 400k files over and over (as many at once as it may, the rest
 * refused at once), tenant B's `exec true` answers with a p99 under a second and `/healthz` always
 * answers, and A's diffs come back bounded (a page, a cursor, marked truncated where the walk was cut).
 */
import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import type { Listener } from '../../src/transports/http-listener.ts';
import { token } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import { startTenantListener } from '../helpers/tenant-listener.ts';
import { type TenantRest, tenantRest } from '../helpers/tenant-rest.ts';

const skip = nativeUnavailable();
const TOKEN_A = `tok-alice-${token('a')}`;
const TOKEN_B = `tok-bob-${token('b')}`;
const FILES = 400_000;
/** How long A keeps diffing while B is timed. */
const UNDER_LOAD_MS = 30_000;

const p99 = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.ceil(xs.length * 0.99) - 1] ?? Infinity;

describe('abuse: one tenant diffing 400k files stalls no one', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let listener: Listener;
  let base: string;
  let alice: TenantRest;
  let bob: TenantRest;

  before(async () => {
    fx = await openNative();
    ({ listener, base } = await startTenantListener(fx, { alice: TOKEN_A, bob: TOKEN_B }));
    alice = tenantRest(base, TOKEN_A, 'alice');
    bob = tenantRest(base, TOKEN_B, 'bob');
  });
  after(async () => {
    await listener?.close(2000);
    await fx?.close();
  });

  it("keeps the other tenant's exec p99 under a second", async () => {
    const full = await alice.create({ diskMb: 2048 });
    const empty = await alice.create({});
    const made = await alice.exec(full, {
      argv: [
        'python3',
        '-c',
        `import os\nos.mkdir('/w')\nfor i in range(${FILES}): open(f'/w/f{i}', 'w').close()\nprint(len(os.listdir('/w')))`,
      ],
      timeoutSeconds: 600,
    });
    assert.equal(made.stdout.trim(), String(FILES), made.stderr);
    const own = await bob.create({});

    let stop = false;
    const answered: { added: number; truncated: boolean; next: boolean }[] = [];
    let refused = 0;
    const diffLoop = async () => {
      while (!stop) {
        const r = await alice.call('POST', '/v1/sandboxes/diff', { a: empty, b: full });
        if (r.status === 200)
          answered.push({
            added: (r.json.added as unknown[]).length,
            truncated: r.json.truncated === true,
            next: typeof r.json.nextCursor === 'string',
          });
        else {
          assert.equal(r.status, 429, r.text);
          refused++;
          await new Promise((res) => setTimeout(res, 50));
        }
      }
    };
    // More loops than A may run at once: the extra ones are refused, not queued behind the walks.
    const loops = [1, 2, 3, 4].map(diffLoop);
    // The daemon is this process: how long its event loop was held at most, for the record.
    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();

    const execMs: number[] = [];
    const healthMs: number[] = [];
    const t0 = Date.now();
    while (Date.now() - t0 < UNDER_LOAD_MS) {
      let t = performance.now();
      const r = await bob.exec(own, { argv: ['true'] });
      execMs.push(performance.now() - t);
      assert.equal(r.exitCode, 0);
      t = performance.now();
      const h = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(10_000) });
      healthMs.push(performance.now() - t);
      assert.equal(h.status, 200);
    }
    stop = true;
    loopDelay.disable();
    await Promise.all(loops);

    const max = (xs: number[]) => Math.max(...xs).toFixed(0);
    const line = `bob: ${execMs.length} execs, p99 ${p99(execMs).toFixed(0)} ms (max ${max(execMs)}); /healthz p99 ${p99(healthMs).toFixed(0)} ms (max ${max(healthMs)}); alice: ${answered.length} diffs answered, ${refused} refused; event loop held at most ${(loopDelay.max / 1e6).toFixed(0)} ms (p99 ${(loopDelay.percentile(99) / 1e6).toFixed(0)} ms)`;
    console.log(`# ${line}`);
    assert.ok(answered.length >= 2, `the load was real: ${line}`);
    assert.ok(refused > 0, `A's extra diffs were refused: ${line}`);
    for (const a of answered) {
      assert.ok(a.added <= 10_000, `a page holds at most 10,000 entries (got ${a.added})`);
      assert.ok(a.truncated && a.next, JSON.stringify(a));
    }
    assert.ok(p99(execMs) < 1000, line);
    assert.ok(p99(healthMs) < 1000, line);
  });
});
