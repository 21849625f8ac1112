/**
 * Find the Debian mirror the host's apt already uses, so builds never depend on a hard-coded host.
 * Reads /etc/apt/sources.list (one-line format) and /etc/apt/sources.list.d/*.list / *.sources (deb822).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ForkboxError } from '../domain/errors.ts';

export interface AptSource {
  uris: string[];
  suites: string[];
  components: string[];
  file: string;
}

/** Parse one-line `deb [opts] URI SUITE COMPONENT...` entries (deb-src and comments ignored). */
export function parseOneLine(text: string, file: string): AptSource[] {
  const out: AptSource[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*$/, '').trim();
    if (!line) continue;
    // Drop the optional "[arch=amd64 signed-by=...]" block.
    const parts = line
      .replace(/\[[^\]]*\]/, ' ')
      .split(/\s+/)
      .filter(Boolean);
    if (parts[0] !== 'deb' || parts.length < 3) continue;
    out.push({ uris: [parts[1] as string], suites: [parts[2] as string], components: parts.slice(3), file });
  }
  return out;
}

/** Parse deb822 `.sources` stanzas (Types/URIs/Suites/Components/Enabled). */
export function parseDeb822(text: string, file: string): AptSource[] {
  const out: AptSource[] = [];
  const stanzas = text.split(/\n\s*\n/);
  for (const stanza of stanzas) {
    const fields: Record<string, string> = {};
    let last: string | undefined;
    for (const raw of stanza.split('\n')) {
      if (raw.startsWith('#')) continue;
      if (/^\s/.test(raw) && last !== undefined) {
        // Continuation line of a multi-line field.
        fields[last] = `${fields[last] ?? ''} ${raw.trim()}`;
        continue;
      }
      const m = /^([A-Za-z0-9-]+):\s*(.*)$/.exec(raw);
      if (!m) continue;
      last = (m[1] as string).toLowerCase();
      fields[last] = (m[2] as string).trim();
    }
    const words = (k: string) => (fields[k] ?? '').split(/\s+/).filter(Boolean);
    if (!words('types').includes('deb')) continue;
    if ((fields.enabled ?? 'yes').toLowerCase() === 'no') continue;
    out.push({ uris: words('uris'), suites: words('suites'), components: words('components'), file });
  }
  return out;
}

function readIf(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** All apt `deb` sources, in apt's order: sources.list, then sources.list.d sorted by name. */
export function readAptSources(root = '/'): AptSource[] {
  const etc = join(root, 'etc/apt');
  const sources: AptSource[] = [];
  const main = readIf(join(etc, 'sources.list'));
  if (main !== undefined) sources.push(...parseOneLine(main, join(etc, 'sources.list')));
  let names: string[] = [];
  try {
    names = readdirSync(join(etc, 'sources.list.d')).sort();
  } catch {
    // no sources.list.d: fine
  }
  for (const name of names) {
    const path = join(etc, 'sources.list.d', name);
    // Only the two extensions apt itself reads: "foo.list.disabled" etc. are switched off on purpose.
    if (name.endsWith('.list')) sources.push(...parseOneLine(readIf(path) ?? '', path));
    else if (name.endsWith('.sources')) sources.push(...parseDeb822(readIf(path) ?? '', path));
  }
  return sources;
}

/** Schemes debootstrap can fetch from. */
const USABLE_URI = /^(https?:\/\/|file:\/)/;

/**
 * The mirror URI that serves the main Debian archive for `suite`.
 * An entry qualifies only if its Suites contain exactly `suite` (so `bookworm-security`, `bookworm-updates`
 * and third-party repos with their own suite names such as `nodistro` never match) and, when it lists
 * components, one of them is `main`. `FORKBOX_DEBIAN_MIRROR` in `env` (the daemon's settings, passed in by
 * composition.ts) overrides everything.
 */
export function readAptMirror(
  suite: string,
  opts: { root?: string; env?: Record<string, string | undefined> } = {},
): string {
  const env = opts.env ?? {};
  const override = env.FORKBOX_DEBIAN_MIRROR?.trim();
  if (override) return override.replace(/\/+$/, '');
  const root = opts.root ?? '/';
  const sources = readAptSources(root);
  for (const s of sources) {
    if (!s.suites.includes(suite)) continue;
    if (s.components.length > 0 && !s.components.includes('main')) continue;
    const uri = s.uris.find((u) => USABLE_URI.test(u));
    if (uri) return uri.replace(/\/+$/, '');
  }
  throw new ForkboxError(
    'requirement_missing',
    `no apt source for the Debian suite '${suite}' (main) was found in ${join(root, 'etc/apt')}/sources.list or sources.list.d/. ` +
      `Set FORKBOX_DEBIAN_MIRROR to a Debian mirror URL (the one your apt would use for '${suite}'), or add a '${suite}' entry to apt's sources.`,
    { suite, sourcesSeen: sources.length },
  );
}
