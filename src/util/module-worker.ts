/**
 * Start a worker thread on one of our own modules, whether the daemon runs from the build (dist/*.js) or
 * from the TypeScript sources through tsx. A worker does not inherit the loader hooks its parent registered,
 * and `--import tsx` in a worker's execArgv does not reach its entry module on Node 20, so a source worker
 * starts from a two-line bootstrap that registers tsx first and then imports the entry.
 */
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * `entry` is the module's URL as a sibling of the caller would name it (`new URL('./x.ts', import.meta.url)`);
 * when the caller itself runs built, the `.js` beside it is started instead.
 */
export function startModuleWorker(entry: URL, callerUrl: string, opts: WorkerOptions = {}): Worker {
  const built = fileURLToPath(callerUrl).endsWith('.js');
  if (built) return new Worker(new URL(entry.href.replace(/\.ts$/, '.js')), opts);
  const tsxApi = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsxApi)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(bootstrap, { ...opts, eval: true });
}
