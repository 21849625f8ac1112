/**
 * What a fork's children replay of their source's page: its last `open` and the actions that changed
 * the page after it, in order. Refs are not portable between browsers (Playwright numbers them per
 * browser, frames included: `e4` in one is `f7e4` in another), so an action on a ref is kept with the
 * line of the snapshot the ref was on; a child takes its own snapshot of the same page and acts on the
 * ref on that line.
 */
import type { BrowserAction, ReplayStep } from '../domain/browser.ts';
import { BROWSER } from '../domain/limits.ts';

/** Actions that change a page's state. */
const REPLAYED: ReadonlySet<BrowserAction['action']> = new Set([
  'click',
  'fill',
  'select',
  'press',
  'scroll',
  'navigate',
]);

/** The index of the snapshot line naming `ref`, or undefined. */
export function lineOfRef(snapshot: string, ref: string): number | undefined {
  const i = snapshot.split('\n').findIndex((l) => l.includes(`[ref=${ref}]`));
  return i < 0 ? undefined : i;
}

/** The ref on line `line` of a snapshot, or undefined. */
export function refOnLine(snapshot: string, line: number): string | undefined {
  return /\[ref=((?:f\d+)?e\d+)\]/.exec(snapshot.split('\n')[line] ?? '')?.[1];
}

export interface ReplayLog {
  /** After `a` succeeded; `refLine`: where its ref was in the snapshot it was taken from. */
  record(a: BrowserAction, refLine?: number): void;
  /** A copy of the steps kept: the last open and the page-changing actions after it. */
  steps(): ReplayStep[];
  /** The steps, and whether they are the whole history since the open (false: some were not kept). */
  history(): { steps: ReplayStep[]; complete: boolean };
}

export function createReplayLog(): ReplayLog {
  let steps: ReplayStep[] = [];
  let full = false;
  return {
    record(a: BrowserAction, refLine?: number): void {
      if (a.action === 'open') {
        steps = [{ action: a }];
        full = false;
      } else if (REPLAYED.has(a.action) && steps.length > 0 && !full) {
        // An action whose ref was on no snapshot line cannot be replayed: nothing after it is either.
        if ('ref' in a && a.ref !== undefined && refLine === undefined) full = true;
        else if (steps.length > BROWSER.replayActions) full = true;
        else steps.push(refLine === undefined ? { action: a } : { action: a, refLine });
      }
    },
    steps: (): ReplayStep[] => steps.slice(),
    history: () => ({ steps: steps.slice(), complete: !full }),
  };
}
