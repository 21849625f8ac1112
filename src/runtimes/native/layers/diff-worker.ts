/**
 * The worker thread that diffs layer chains (diff-workers.ts starts it): the walk, sort and hashing of
 * trees a sandbox controls run here, off the daemon's event loop. One job at a time; the answer or the
 * error as a ForkboxError's JSON goes back with the job's id.
 */
import { parentPort } from 'node:worker_threads';
import { toForkboxError } from '../../../domain/errors.ts';
import { type DiffJob, type DiffReply, toWire } from './diff-workers.ts';
import { diffLayerChains } from './layer-diff.ts';

const port = parentPort;
if (!port) throw new Error('diff-worker.ts runs as a worker thread (diff-workers.ts starts it)');
port.on('message', (job: DiffJob) => {
  diffLayerChains(job.a, job.b, job.opts).then(
    (diff) => port.postMessage({ id: job.id, diff: toWire(diff) } satisfies DiffReply),
    (e: unknown) => port.postMessage({ id: job.id, error: toForkboxError(e).toJSON() } satisfies DiffReply),
  );
});
