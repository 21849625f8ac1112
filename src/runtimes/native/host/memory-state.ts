/**
 * How much memory the host really has to give: MemAvailable from /proc/meminfo (free memory plus what
 * the kernel can reclaim without swapping) and, where the kernel has PSI, the share of time tasks were
 * stalled waiting for memory (/proc/pressure/memory, `full avg10`, in percent).
 */
import { readFileSync } from 'node:fs';

export interface MemoryState {
  availableBytes: number;
  /** PSI `full avg10` (percent of the last 10 s in which every non-idle task stalled on memory); null without PSI. */
  pressureFull10: number | null;
}

export function parseMemAvailable(meminfo: string): number | null {
  const m = /^MemAvailable:\s+(\d+)\s+kB$/m.exec(meminfo);
  return m?.[1] === undefined ? null : Number(m[1]) * 1024;
}

export function parsePsiFull10(psi: string): number | null {
  const m = /^full avg10=([0-9.]+)/m.exec(psi);
  return m?.[1] === undefined ? null : Number(m[1]);
}

export function readMemoryState(): MemoryState {
  const available = parseMemAvailable(readFileSync('/proc/meminfo', 'utf8'));
  let pressure: number | null = null;
  try {
    pressure = parsePsiFull10(readFileSync('/proc/pressure/memory', 'utf8'));
  } catch {
    // no PSI in this kernel (or it is disabled): MemAvailable alone decides
  }
  return { availableBytes: available ?? 0, pressureFull10: pressure };
}
