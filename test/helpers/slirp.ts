/**
 * The user-mode NATs (slirp4netns) of `open` sandboxes, as /proc shows them: the engine runs in the test's
 * own process, so they are its children.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export interface NatProcess {
  pid: number;
  uid: number;
  /** CapEff from /proc/<pid>/status, as a number. */
  capEff: number;
  /** Its user namespace (`user:[…]`), or '' when unreadable. */
  userNs: string;
}

function status(pid: string): Record<string, string> | null {
  try {
    const out: Record<string, string> = {};
    for (const line of readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
      const at = line.indexOf(':');
      if (at > 0) out[line.slice(0, at)] = line.slice(at + 1).trim();
    }
    return out;
  } catch {
    return null;
  }
}

/** Every slirp4netns process whose parent is this process (zombies excluded). */
export function natProcesses(): NatProcess[] {
  const out: NatProcess[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const st = status(pid);
    if (st?.Name !== 'slirp4netns' || st.PPid !== String(process.pid) || st.State?.startsWith('Z')) continue;
    let userNs = '';
    try {
      userNs = readlinkSync(`/proc/${pid}/ns/user`);
    } catch {
      // gone meanwhile
    }
    out.push({
      pid: Number(pid),
      uid: Number((st.Uid ?? '').split(/\s+/)[0]),
      capEff: Number.parseInt(st.CapEff ?? 'ffffffff', 16),
      userNs,
    });
  }
  return out;
}
