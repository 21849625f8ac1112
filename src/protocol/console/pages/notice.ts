/**
 * What an action's redirect tells the next page: a fixed set of notices built from checked query
 * parameters, never text taken from the URL (a crafted link cannot put words in the console's mouth).
 */

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

export type Notice =
  | { done: 'forked'; made: number; of: number }
  | { done: 'snapshot'; name: string }
  | { done: 'killed' }
  | { done: 'uploaded'; name: string }
  | { done: 'restored'; name: string }
  | { done: 'ttl'; minutes: number };

/** The query string (with `?`) for a notice. */
export function noticeQuery(n: Notice): string {
  const q = new URLSearchParams({ done: n.done });
  if (n.done === 'forked') {
    q.set('made', String(n.made));
    q.set('of', String(n.of));
  }
  if (n.done === 'snapshot' || n.done === 'uploaded' || n.done === 'restored') q.set('name', n.name);
  if (n.done === 'ttl') q.set('minutes', String(n.minutes));
  return `?${q}`;
}

const count = (v: string | undefined, digits = 2) =>
  v !== undefined && new RegExp(`^[0-9]{1,${digits}}$`).test(v) ? Number(v) : undefined;

/** The notice's text, or undefined when the query names none (or a malformed one). */
export function noticeText(query: (name: string) => string | undefined): string | undefined {
  switch (query('done')) {
    case 'forked': {
      const made = count(query('made'));
      const of = count(query('of'));
      return made === undefined || of === undefined ? undefined : `Forked ${made} of ${of}.`;
    }
    case 'snapshot': {
      const name = query('name');
      return name !== undefined && NAME_RE.test(name) ? `Snapshot ${name} taken.` : undefined;
    }
    case 'killed':
      return 'Sandbox killed.';
    case 'uploaded': {
      const name = query('name');
      return name !== undefined && NAME_RE.test(name) ? `Uploaded ${name}.` : 'File uploaded.';
    }
    case 'restored': {
      const name = query('name');
      return name !== undefined && NAME_RE.test(name) ? `Restored from snapshot ${name}.` : undefined;
    }
    case 'ttl': {
      const minutes = count(query('minutes'), 6);
      return minutes === undefined ? undefined : `It now ends in ${minutes} minutes unless extended.`;
    }
    default:
      return undefined;
  }
}
