import { ForkboxError } from './errors.ts';
import type { SandboxState } from './types.ts';

/** Every allowed sandbox state transition, in one place. */
const TRANSITIONS: Record<SandboxState, readonly SandboxState[]> = {
  // 'lost': the daemon died mid-create and recovery found no agent (Runtime.recover gets creating ones too).
  creating: ['running', 'failed', 'killing', 'lost'],
  // 'failed' from running/paused: its PID 1 died or its agent stopped answering (service/sandboxes/sandbox-exit.ts).
  running: ['paused', 'killing', 'lost', 'failed'],
  paused: ['running', 'killing', 'lost', 'failed'],
  killing: ['killed', 'lost'],
  killed: [],
  failed: [],
  lost: ['killing', 'killed'],
};

export const LIVE_STATES: readonly SandboxState[] = ['creating', 'running', 'paused', 'killing'];

export function isLive(state: SandboxState): boolean {
  return LIVE_STATES.includes(state);
}

export function canTransition(from: SandboxState, to: SandboxState): boolean {
  return TRANSITIONS[from].includes(to);
}

export function assertTransition(id: string, from: SandboxState, to: SandboxState): void {
  if (!canTransition(from, to)) {
    throw new ForkboxError('conflict', `sandbox '${id}' cannot go from ${from} to ${to}.`, {
      sandbox: id,
      from,
      to,
    });
  }
}
