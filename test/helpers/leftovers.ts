/**
 * What a daemon left on the host without an owner, seen from outside it: a state dir's store rows (read
 * only) against the host's mounts, cgroups, processes and directories. Used after a crash and restart:
 * every object a daemon makes must belong to a live sandbox or template of its store, and every row must
 * be settled (no sandbox left `creating`/`killing`, no exec left `running`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { mountsUnder } from '../../src/runtimes/native/host/mounts.ts';
import { type Controller, controllerFile } from './cgroup-files.ts';
import { storageMounts } from './native.ts';

export interface StoreView {
  /** Ids of sandboxes recorded running or paused. */
  live: string[];
  /** Ids of templates recorded running, with their PID 1's host pid. */
  templates: Map<string, number>;
  /** Ids of templates recorded starting (none may be after a restart: a start does not survive one). */
  startingTemplates: string[];
  /** Every sandbox row: id → state and end reason. */
  sandboxes: Map<string, { state: string; endReason: string | null }>;
  /** Exec rows still recorded running. */
  runningExecs: string[];
}

export function readStore(stateDir: string): StoreView {
  const db = new Database(join(stateDir, 'forkbox.db'), { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare('SELECT id, state, end_reason FROM sandboxes').all() as {
      id: string;
      state: string;
      end_reason: string | null;
    }[];
    const tpls = db.prepare('SELECT id, state, host_pid FROM templates').all() as {
      id: string;
      state: string;
      host_pid: number | null;
    }[];
    const execs = db.prepare("SELECT id FROM execs WHERE state = 'running'").all() as { id: string }[];
    return {
      live: rows.filter((r) => r.state === 'running' || r.state === 'paused').map((r) => r.id),
      templates: new Map(tpls.filter((t) => t.state === 'running').map((t) => [t.id, t.host_pid ?? 0])),
      startingTemplates: tpls.filter((t) => t.state === 'starting').map((t) => t.id),
      sandboxes: new Map(rows.map((r) => [r.id, { state: r.state, endReason: r.end_reason }])),
      runningExecs: execs.map((e) => e.id),
    };
  } finally {
    db.close();
  }
}

function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function subdirs(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
  } catch {
    return [];
  }
}

const CONTROLLERS: Controller[] = ['memory', 'pids', 'cpu', 'cpuacct', 'freezer'];

/** A process's cgroup path in the memory hierarchy (v1) or the unified one (v2). */
function memoryCgroupOf(pid: string): string | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
  } catch {
    return null;
  }
  for (const line of text.split('\n')) {
    const [hier, controllers = '', path = ''] = line.split(':');
    if (controllers.split(',').includes('memory') || (hier === '0' && controllers === '')) return path;
  }
  return null;
}

/** The pid of the process that owns the state dir now (its daemon), from `<state>/lock.pid`. */
function readOwnerPid(stateDir: string): number {
  try {
    return Number(readFileSync(join(stateDir, 'lock.pid'), 'utf8').trim());
  } catch {
    return 0;
  }
}

function nsDepth(pid: number | string): number {
  try {
    const m = /^NSpid:\s*(.*)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m?.[1]?.trim().split(/\s+/).length ?? 0;
  } catch {
    return 0;
  }
}

/**
 * Everything on the host that this state dir's daemon made and no live sandbox or template of its store
 * owns, one line each (empty: nothing leaked). `view`: the store as read now.
 */
export function leftovers(stateDir: string, view: StoreView = readStore(stateDir)): string[] {
  const out: string[] = [];
  const live = new Set(view.live);
  const tpls = view.templates;
  const stateId = readFileSync(join(stateDir, 'state-id'), 'utf8').trim();

  for (const [id, r] of view.sandboxes) {
    if (r.state === 'creating' || r.state === 'killing') out.push(`row: sandbox ${id} left '${r.state}'`);
    else if (!live.has(id) && !r.endReason)
      out.push(`row: sandbox ${id} ended '${r.state}' without a reason`);
  }
  for (const e of view.runningExecs) out.push(`row: exec ${e} still 'running'`);
  for (const t of view.startingTemplates) out.push(`row: template ${t} left 'starting'`);

  // Mounts: the storage driver's and inbox tree's, each live template's root and inbox, each live
  // sandbox's inbox. Anything else (a child's root or inbox under a template's inbox, a dead sandbox's
  // inbox) has no owner.
  const owned = new Set(storageMounts(stateDir));
  for (const t of tpls.keys()) {
    owned.add(join(stateDir, 'templates', t, 'bundle', 'rootfs'));
    owned.add(join(stateDir, 'inbox', t));
  }
  for (const id of live) owned.add(join(stateDir, 'inbox', id));
  for (const m of mountsUnder(stateDir)) if (!owned.has(m)) out.push(`mount: ${m}`);

  // cgroups under forkbox/<state id>/ in every hierarchy a sandbox or template is made in.
  for (const c of CONTROLLERS) {
    for (const id of subdirs(controllerFile(c, `forkbox/${stateId}/sandboxes`, '')))
      if (!live.has(id)) out.push(`cgroup: ${c} forkbox/${stateId}/sandboxes/${id}`);
    for (const t of subdirs(controllerFile(c, `forkbox/${stateId}/templates`, '')))
      if (!tpls.has(t)) out.push(`cgroup: ${c} forkbox/${stateId}/templates/${t}`);
  }

  // Processes in this state dir's cgroups: in a sandbox's group only when it is live; in a template's
  // only the template's own (a process one pid namespace deeper is a sandbox cloned but never placed).
  const base = `/forkbox/${stateId}/`;
  for (const pid of entries('/proc').filter((p) => /^\d+$/.test(p))) {
    const cg = memoryCgroupOf(pid);
    if (!cg?.startsWith(base)) continue;
    const [kind, owner = ''] = cg.slice(base.length).split('/');
    if (kind === 'sandboxes' && !live.has(owner)) out.push(`process: ${pid} in ${cg}`);
    if (kind === 'templates') {
      const tplPid = tpls.get(owner);
      if (tplPid === undefined) out.push(`process: ${pid} in ${cg} (no such template)`);
      else if (nsDepth(pid) > nsDepth(tplPid)) out.push(`process: ${pid} in ${cg} (an unplaced sandbox)`);
    }
  }

  // Helpers a daemon runs (runc) that outlived it: any process naming the state dir but its owner.
  const owner = readOwnerPid(stateDir);
  for (const pid of entries('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== owner)) {
    let cmd: string;
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      continue;
    }
    if (cmd.includes(`${stateDir}/`) && /\brunc\b/.test(cmd)) out.push(`process: ${pid} ${cmd.trim()}`);
  }

  // Directories in the state dir, by owner.
  for (const id of entries(join(stateDir, 'sandboxes'))) if (!live.has(id)) out.push(`dir: sandboxes/${id}`);
  for (const n of entries(join(stateDir, 'disks')))
    if (!live.has(n.replace(/\.img$/, ''))) out.push(`file: disks/${n}`);
  for (const id of entries(join(stateDir, 'inbox'))) {
    if (!live.has(id) && !tpls.has(id)) out.push(`dir: inbox/${id}`);
    else if (tpls.has(id))
      for (const n of entries(join(stateDir, 'inbox', id)))
        if (n !== 'ctl.sock') out.push(`dir: inbox/${id}/${n}`);
  }
  for (const t of entries(join(stateDir, 'templates'))) if (!tpls.has(t)) out.push(`dir: templates/${t}`);
  for (const t of entries(join(stateDir, 'runc'))) if (!tpls.has(t)) out.push(`dir: runc/${t}`);
  return out;
}

/**
 * Sandboxes cloned by a template's worker that have not greeted the host yet: processes in a template's
 * memory cgroup one pid namespace deeper than its PID 1 (a child is moved to its own cgroup at its greeting).
 */
export function unplacedChildren(stateDir: string): number {
  const stateId = readFileSync(join(stateDir, 'state-id'), 'utf8').trim();
  let n = 0;
  for (const t of subdirs(controllerFile('memory', `forkbox/${stateId}/templates`, ''))) {
    let procs: string[];
    try {
      procs = readFileSync(
        controllerFile('memory', `forkbox/${stateId}/templates/${t}`, 'cgroup.procs'),
        'utf8',
      )
        .split('\n')
        .filter(Boolean);
    } catch {
      continue;
    }
    const depths = procs.map(nsDepth).filter((d) => d > 0);
    const top = Math.min(...depths);
    n += depths.filter((d) => d > top).length;
  }
  return n;
}
