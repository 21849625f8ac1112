// A node:test reporter that tallies results for scripts/run-tests.mjs: passes, failures and skips (with
// their reasons), tests and suites apart. It writes one JSON summary to FORKBOX_TEST_TALLY at the end.
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';

export default async function* tally(source) {
  const t = { pass: 0, fail: 0, skipped: [], failed: [], suitesFailed: 0, todo: 0 };
  for await (const e of source) {
    if (e.type !== 'test:pass' && e.type !== 'test:fail') continue;
    const d = e.data;
    const where = `${d.file ? relative(process.cwd(), d.file) : '?'}: ${d.name}`;
    const suite = d.details?.type === 'suite';
    if (d.skip !== undefined && d.skip !== false) {
      t.skipped.push({
        what: `${suite ? 'suite' : 'test'} ${where}`,
        reason: d.skip === true ? '(no reason given)' : String(d.skip),
      });
    } else if (d.todo !== undefined && d.todo !== false) {
      t.todo++;
    } else if (e.type === 'test:fail') {
      if (suite) t.suitesFailed++;
      else t.fail++;
      t.failed.push(where);
    } else if (!suite) {
      t.pass++;
    }
  }
  if (process.env.FORKBOX_TEST_TALLY) writeFileSync(process.env.FORKBOX_TEST_TALLY, JSON.stringify(t));
  yield '';
}
