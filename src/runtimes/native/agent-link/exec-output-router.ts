/**
 * The output side of one exec: the agent's events become output chunks for the caller and the two streams'
 * collectors (output.ts) for the inline result.
 */
import { AGENT_BOUNDS } from '../../../domain/limits.ts';
import type { ExecEvents, ExecOutputChunk, ExecSpec } from '../../../service/ports.ts';
import type { AgentEvent } from './agent-connection.ts';
import { StreamCollector, type StreamName } from './output.ts';

/** Inline budget per stream when the caller gives none. */
export const DEFAULT_OUTPUT_BYTES = AGENT_BOUNDS.defaultOutputBytes;

const num = (v: unknown, d = 0): number => (typeof v === 'number' && Number.isFinite(v) ? v : d);
const isStream = (k: string): k is StreamName => k === 'stdout' || k === 'stderr';

export interface OutputRouter {
  /** The two streams' collectors of the inline result. */
  streams: Record<StreamName, StreamCollector>;
  /** Handle one agent event of the exec: started, peek, or head/tail bytes of a stream. */
  onEvent(ev: AgentEvent): void;
  /** The inline streams, once the result is in (markers and held tails are emitted now). */
  finish(r: Record<string, unknown>): Record<StreamName, ReturnType<StreamCollector['finish']>>;
}

/**
 * Turns the agent's events for one exec into output chunks and the two streams' collectors. Tail bytes
 * are held (≤ 64 KiB per stream) until the result names what was left out, so that a streaming reader
 * gets head, marker line and tail in order, exactly the inline result.
 */
export function createOutputRouter(
  spec: ExecSpec,
  events: ExecEvents | undefined,
  onStarted: () => void,
): OutputRouter {
  const budget = spec.maxOutputBytes ?? DEFAULT_OUTPUT_BYTES;
  const latest = spec.mode === 'latest';
  const streams = {
    stdout: new StreamCollector('stdout', budget),
    stderr: new StreamCollector('stderr', budget),
  };
  const tailOffsets: Record<StreamName, number | undefined> = { stdout: undefined, stderr: undefined };
  let seq = 0;
  const emit = (stream: StreamName, data: Buffer, offset?: number) => {
    if (data.length === 0) return;
    const c: ExecOutputChunk = { seq: seq++, stream, data };
    if (offset !== undefined) c.offset = offset;
    events?.onOutput?.(c);
  };
  return {
    streams,
    onEvent(ev: AgentEvent) {
      const offset = ev.offset;
      if (ev.kind === 'started') {
        onStarted();
        events?.onStarted?.(num(ev.pid));
      } else if (ev.kind === 'peek' && ev.stream) {
        events?.onPeek?.({ stream: ev.stream, data: ev.body.subarray(0, 4096), totalBytes: num(ev.total) });
      } else if (isStream(ev.kind)) {
        if (latest) {
          streams[ev.kind].addForwarded(ev.body.length);
          emit(ev.kind, ev.body, offset);
        } else emit(ev.kind, streams[ev.kind].addHead(ev.body), offset);
      } else if (ev.kind === 'stdout_tail' || ev.kind === 'stderr_tail') {
        const s: StreamName = ev.kind === 'stdout_tail' ? 'stdout' : 'stderr';
        if (latest) {
          streams[s].addForwarded(ev.body.length);
          emit(s, ev.body, offset);
        } else {
          streams[s].addTail(ev.body);
          tailOffsets[s] = offset;
        }
      }
    },
    finish(r: Record<string, unknown>) {
      const out = {} as Record<StreamName, ReturnType<StreamCollector['finish']>>;
      for (const s of ['stdout', 'stderr'] as const) {
        const f = streams[s].finish(r);
        out[s] = f;
        if (latest) continue;
        if (f.marker) emit(s, f.marker);
        emit(s, f.tail, tailOffsets[s]);
      }
      return out;
    },
  };
}
