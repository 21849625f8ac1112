/**
 * The liveness watchdog of one agent connection (see agent-timeouts.ts). While something waits on the
 * agent, it notes when the agent last sent anything; after a third of the liveness bound without a frame it
 * pings, and after the whole bound it declares the agent unresponsive. A suspended agent (its sandbox is
 * paused: frozen on purpose) is never declared unresponsive: its silence clock restarts on thaw.
 */
export interface LivenessOptions {
  livenessMs: number;
  /** True while the agent is frozen on purpose. */
  suspended: () => boolean;
  /** True while a request that the watchdog covers is waiting. */
  waiting: () => boolean;
  /** Send a ping; settles with its answer (or the connection's end). */
  ping: () => Promise<unknown>;
  /** The agent sent nothing for `quietMs` while requests waited. */
  onUnresponsive: (quietMs: number) => void;
  now?: () => number;
}

export class LivenessWatch {
  readonly #o: LivenessOptions;
  readonly #now: () => number;
  #lastHeard: number;
  #pinging = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(o: LivenessOptions) {
    this.#o = o;
    this.#now = o.now ?? Date.now;
    this.#lastHeard = this.#now();
  }

  /** A frame arrived from the agent. */
  heard(): void {
    this.#lastHeard = this.#now();
  }

  /** A covered request is waiting: make sure the watchdog runs. */
  arm(): void {
    if (this.#timer !== undefined) return;
    // Silence is counted from the moment something waits, not from the last frame of an idle connection.
    if (!this.#pinging) this.#lastHeard = this.#now();
    const every = Math.max(20, Math.min(1000, Math.floor(this.#o.livenessMs / 6)));
    this.#timer = setInterval(() => this.tick(), every);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** One check (exported for tests; the timer calls it). */
  tick(): void {
    const now = this.#now();
    if (this.#o.suspended()) {
      this.#lastHeard = now;
      return;
    }
    // Keep watching while a ping is out: a caller that gave up must not stop the verdict on the agent.
    if (!this.#o.waiting() && !this.#pinging) {
      this.stop();
      return;
    }
    const quiet = now - this.#lastHeard;
    if (quiet >= this.#o.livenessMs) {
      this.stop();
      this.#o.onUnresponsive(quiet);
      return;
    }
    if (quiet >= this.#o.livenessMs / 3 && !this.#pinging) {
      this.#pinging = true;
      void this.#o.ping().then(
        () => {
          this.#pinging = false;
        },
        () => {
          this.#pinging = false;
        },
      );
    }
  }
}
