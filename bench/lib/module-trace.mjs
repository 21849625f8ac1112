/**
 * Records every module file a Node process loads, ESM and CommonJS, one absolute path per line, in the
 * file named by FORKBOX_MODULE_TRACE:
 *
 *   FORKBOX_MODULE_TRACE=/tmp/mods node --import ./bench/lib/module-trace.mjs bin/forkbox.js --version
 *
 * Used by the CLI start-up benchmark (module counts per command) and by test/unit/cli-lazy-load.test.ts
 * (what `forkbox --version` and `forkbox run` may load). Plain JavaScript: it runs before any loader.
 * Paths may repeat (a CommonJS file imported from ESM is seen by both hooks): count unique lines.
 */
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';

const out = process.env.FORKBOX_MODULE_TRACE;
if (out) {
  // ESM loads, seen by a load hook (it runs on the loader's own thread: the path comes through `data`).
  const hooks = `
    import { appendFileSync } from 'node:fs';
    import { fileURLToPath } from 'node:url';
    let out;
    export function initialize(data) { out = data.out; }
    export async function load(url, context, next) {
      if (url.startsWith('file:')) appendFileSync(out, fileURLToPath(url) + '\\n');
      return next(url, context);
    }`;
  register(`data:text/javascript,${encodeURIComponent(hooks)}`, { data: { out } });
  // CommonJS files required from CommonJS never reach the ESM hooks: see them where they compile.
  const Module = createRequire(import.meta.url)('node:module');
  const compile = Module.prototype._compile;
  Module.prototype._compile = function (content, filename) {
    appendFileSync(out, `${filename}\n`);
    return compile.call(this, content, filename);
  };
}
