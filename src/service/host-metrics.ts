/**
 * Counters the daemon keeps outside any one listener: what the runtime refused (control-socket
 * connections, admissions) and the daemon's file descriptors. The runtime reports into it through the
 * RuntimeCounters port; the TCP listener's /metrics reads it (protocol/http/metrics.ts).
 */
import type { AdmissionRefusal, ControlRefusal, RuntimeCounters } from './ports.ts';

export interface FdUsage {
  open: number;
  limit: number;
}

export interface HostMetricsSnapshot {
  controlConnectionsRefused: Record<ControlRefusal, number>;
  admissionsRefused: Record<AdmissionRefusal, number>;
  fds: FdUsage | null;
  egress: { accepted: number; refused: number };
  ports: { accepted: number; refused: number };
}

export interface HostMetrics extends RuntimeCounters {
  read(): HostMetricsSnapshot;
}

export function createHostMetrics(opts: { fds?: () => FdUsage } = {}): HostMetrics {
  const control: Record<ControlRefusal, number> = { peer: 0, limit: 0, hello: 0 };
  const admission: Record<AdmissionRefusal, number> = {
    memory_pressure: 0,
    memory_available: 0,
    memory_limits: 0,
    disk: 0,
    fds: 0,
  };
  const egress = { accepted: 0, refused: 0 };
  const ports = { accepted: 0, refused: 0 };
  return {
    controlConnectionRefused(reason) {
      control[reason] += 1;
    },
    admissionRefused(reason) {
      admission[reason] += 1;
    },
    egressDecision(decision) {
      egress[decision] += 1;
    },
    portConnection(decision) {
      ports[decision] += 1;
    },
    read() {
      let fds: FdUsage | null = null;
      try {
        fds = opts.fds?.() ?? null;
      } catch {
        fds = null;
      }
      return {
        controlConnectionsRefused: { ...control },
        admissionsRefused: { ...admission },
        fds,
        egress: { ...egress },
        ports: { ...ports },
      };
    },
  };
}
