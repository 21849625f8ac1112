/**
 * A browser's events (console messages, page errors, requests, responses, failures, navigations) for
 * `events since a cursor`: the newest BROWSER.events are kept, each text cut to BROWSER.eventTextBytes;
 * sequence numbers keep counting, so a reader learns how many it missed.
 */
import type { BrowserEvent } from '../domain/browser.ts';
import { BROWSER } from '../domain/limits.ts';

export function cut(text: string, bytes: number = BROWSER.eventTextBytes): string {
  if (Buffer.byteLength(text) <= bytes) return text;
  // Cut on a character boundary: a cut in the middle of one would leave a broken character.
  return `${Buffer.from(text)
    .subarray(0, bytes)
    .toString('utf8')
    .replace(/\uFFFD$/, '')}…`;
}

export interface EventLog {
  /** Records an event, stamped with the next sequence number and the time, its texts cut. */
  add(e: Omit<BrowserEvent, 'seq' | 'at'>): void;
  /** Events after `since`, at most `limit`; `next`: the cursor for next time; `dropped`: how many missed. */
  since(since?: number, limit?: number): { events: BrowserEvent[]; next: number; dropped: number };
  /** The sequence number of the latest event (0 before any). */
  readonly last: number;
}

export function createEventLog(now: () => number = Date.now, max: number = BROWSER.events): EventLog {
  const kept: BrowserEvent[] = [];
  let seq = 0;
  return {
    add(e: Omit<BrowserEvent, 'seq' | 'at'>): void {
      seq += 1;
      const ev: BrowserEvent = { seq, at: now(), type: e.type };
      if (e.level !== undefined) ev.level = cut(e.level, 32);
      if (e.text !== undefined) ev.text = cut(e.text);
      if (e.url !== undefined) ev.url = cut(e.url);
      if (e.status !== undefined) ev.status = e.status;
      kept.push(ev);
      if (kept.length > max) kept.shift();
    },
    since(since = 0, limit = 100): { events: BrowserEvent[]; next: number; dropped: number } {
      const first = kept[0]?.seq ?? seq + 1;
      const dropped = Math.max(0, first - since - 1);
      const events = kept.filter((e) => e.seq > since).slice(0, Math.max(1, Math.min(limit, max)));
      return { events, next: events.at(-1)?.seq ?? Math.max(since, seq), dropped };
    },
    get last(): number {
      return seq;
    },
  };
}
