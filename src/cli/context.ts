/** What every command gets: global options, output, and (lazily) the engine API from the daemon. */
import type { ForkboxApi } from '../service/api.ts';
import type { Output } from './output/output.ts';

export interface GlobalOptions {
  stateDir: string;
  json: boolean;
}

export interface CliContext {
  globals(): GlobalOptions;
  out(): Output;
  /**
   * A client of the daemon: the remote one at --url / FORKBOX_URL, else the one owning the state dir
   * (started when absent and allowed). With `signal`, every request it makes is aborted when the signal
   * fires (see interrupt.ts): the daemon sees its caller leave and stops the work.
   */
  api(opts?: { signal?: AbortSignal }): Promise<ForkboxApi>;
  /** The process exit code once the command returns (default 0). */
  setExitCode(code: number): void;
}
