/**
 * The browser (docs/BROWSER.md): a page's open → snapshot → click → snapshot round trip on a warm
 * browser, the first open (Chromium's start in the sandbox), and the memory a browser adds to a sandbox —
 * each against the same steps with playwright-core driving a Chromium on the host (Debian's, same flags,
 * same page from a file) in the same run. Measured on the first surface. Needs the browser image.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { ForkboxApi } from '../src/service/api.ts';
import { type BenchContext, type Benchmark, killAll } from './lib/context.ts';
import { cgroupMemoryBytes, cgroupPids, processesMemory, sandboxCgroup } from './lib/procmem.ts';
import { emptyResult, ratio, row } from './lib/report.ts';
import { timeMs } from './lib/stats.ts';

const NAME = 'browser';
const COLD_RUNS = 5;
const PAGE = `<!doctype html><title>Bench</title><label>Name <input></label>
<button onclick="this.textContent='Done'">Go</button><p>${'text '.repeat(200)}</p>`;
const refOf = (snap: string, re: RegExp) => re.exec(snap)?.[1] ?? '';

/** The host peer's processes: every Chromium whose command line names its profile. */
function hostChromiumPids(profile: string): number[] {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .filter((n) => {
      try {
        return readFileSync(`/proc/${n}/cmdline`, 'utf8').includes(profile);
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function forkboxRoundTrip(api: ForkboxApi, id: string): Promise<void> {
  const open = await api.browser(id, { action: 'open', url: 'file:///srv/bench.html' });
  const snap = (await api.browser(id, { action: 'snapshot' })).snapshot ?? '';
  await api.browser(id, { action: 'click', ref: refOf(snap, /button "Go" \[ref=(\w+)\]/) });
  const after = (await api.browser(id, { action: 'snapshot' })).snapshot ?? '';
  if (!open.title || !/button "Done"/.test(after)) throw new Error(`the click did not land: ${after}`);
}

export const browserBench: Benchmark = {
  name: NAME,
  description:
    'browser: open→snapshot→click→snapshot, first open, memory; vs playwright-core + host Chromium',
  async run(ctx: BenchContext) {
    const out = emptyResult();
    const s = ctx.surfaces[0];
    if (!s) throw new Error('no surface');
    const runs = Math.min(ctx.runs, 30);
    const ids: string[] = [];
    const profile = mkdtempSync(join(tmpdir(), 'forkbox-bench-chromium-'));
    const file = join(profile, 'bench.html');
    writeFileSync(file, PAGE);
    try {
      // forkbox: a sandbox of the browser image, the page in its files.
      const cold: number[] = [];
      for (let i = 0; i < COLD_RUNS; i++) {
        const { id } = await s.api.createSandbox({ image: 'debian-browser' });
        ids.push(id);
        await s.api.writeFile(id, '/srv/bench.html', Buffer.from(PAGE));
        cold.push(await timeMs(() => s.api.browser(id, { action: 'open', url: 'file:///srv/bench.html' })));
      }
      const id = ids[0] ?? '';
      for (const other of ids.slice(1)) await s.api.browser(other, { action: 'close' });
      const warm: number[] = [];
      for (let i = 0; i < runs; i++) warm.push(await timeMs(() => forkboxRoundTrip(s.api, id)));
      const cg = sandboxCgroup(id);
      const fbUss = processesMemory(cgroupPids(cg)).ussKb / 1024;
      const fbCg = (cgroupMemoryBytes(cg) ?? Number.NaN) / 2 ** 20;

      // The peer: playwright-core launching the host's Chromium with the same flags.
      const hostCold: number[] = [];
      const hostWarm: number[] = [];
      let hostUss = Number.NaN;
      for (let i = 0; i < COLD_RUNS; i++) {
        const dir = join(profile, `p${i}`);
        let ctxp: Awaited<ReturnType<typeof chromium.launchPersistentContext>> | undefined;
        hostCold.push(
          await timeMs(async () => {
            ctxp = await chromium.launchPersistentContext(dir, {
              executablePath: '/usr/lib/chromium/chromium',
              headless: true,
              args: [
                '--no-sandbox',
                '--disable-gpu',
                '--disable-dev-shm-usage',
                '--disable-background-networking',
              ],
            });
            await (ctxp.pages()[0] ?? (await ctxp.newPage())).goto(`file://${file}`);
          }),
        );
        const page = ctxp?.pages()[0];
        if (i === 0 && page) {
          for (let j = 0; j < runs; j++)
            hostWarm.push(
              await timeMs(async () => {
                await page.goto(`file://${file}`);
                const snap = await page.ariaSnapshot({ mode: 'ai' });
                await page.locator(`aria-ref=${refOf(snap, /button "Go" \[ref=(\w+)\]/)}`).click();
                await page.ariaSnapshot({ mode: 'ai' });
              }),
            );
          hostUss = processesMemory(hostChromiumPids(dir)).ussKb / 1024;
        }
        await ctxp?.close();
      }
      const rt = row(NAME, `${s.name}: open→snapshot→click→snapshot (warm browser)`, 'ms', warm);
      const rtHost = row(NAME, 'peer: the same with playwright-core + host Chromium', 'ms', hostWarm);
      const first = row(NAME, `${s.name}: first open (Chromium starts in a new sandbox)`, 'ms', cold);
      const firstHost = row(NAME, 'peer: launch host Chromium + first goto', 'ms', hostCold);
      out.rows.push(rt, rtHost, first, firstHost);
      out.rows.push(
        row(NAME, `${s.name}: USS of a sandbox with its browser open`, 'MiB', [fbUss]),
        row(NAME, `${s.name}: memory cgroup of that sandbox`, 'MiB', [fbCg]),
        row(NAME, 'peer: USS of the host Chromium (all its processes)', 'MiB', [hostUss]),
      );
      out.ratios.push(
        ratio(NAME, 'round trip: forkbox / host playwright', rt, rtHost),
        ratio(NAME, 'first open: forkbox / host launch', first, firstHost),
      );
    } finally {
      await killAll(s.api, ids, ctx.log);
      rmSync(profile, { recursive: true, force: true });
    }
    return out;
  },
};
