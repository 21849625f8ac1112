/** The browser's port (src/browser/ implements it, composition.ts wires it; docs/BROWSER.md). */
import type { Duplex } from 'node:stream';
import type { BrowserAction, BrowserResult, ReplayStep } from '../../domain/browser.ts';
import type { NetworkPolicy } from '../../domain/network.ts';

/** What a sandbox's browser needs of its sandbox (built per call by the engine, for the caller). */
export interface BrowserHost {
  /** The sandbox's tenant: browsers are counted per tenant (BROWSER.perTenant). */
  tenant: string;
  network: NetworkPolicy;
  exists(path: string): Promise<boolean>;
  /** Start a background exec; its id. */
  start(argv: string[]): Promise<string>;
  /** null while it runs; once it ended, what it said (its state and stderr's tail). */
  ended(execId: string): Promise<string | null>;
  cancel(execId: string): Promise<void>;
  /** A file's text, or null when it is not there (yet). */
  read(path: string): Promise<string | null>;
  /** A connection to `port` on the sandbox's loopback, made from inside by its agent. */
  dial(port: number): Promise<Duplex>;
}

/** A page's history as a fork's children replay it; `complete: false`: actions past a bound were not kept. */
export interface BrowserHistory {
  steps: ReplayStep[];
  complete: boolean;
}

/** The daemon's browsers, one per sandbox (src/browser/, docs/BROWSER.md). */
export interface Browsers {
  /** Run `a` on sandbox `id`'s browser (its runtime id); `open` starts one when there is none. */
  act(id: string, host: () => BrowserHost, a: BrowserAction): Promise<BrowserResult>;
  /** The page's `open` and the actions that changed it since (for a fork's children); none: no browser. */
  history(id: string): BrowserHistory | undefined;
  /** Replay `steps` in sandbox `id`'s browser (started by the first, an `open`). */
  replay(id: string, host: () => BrowserHost, steps: ReplayStep[]): Promise<void>;
  closeAll(): Promise<void>;
}
