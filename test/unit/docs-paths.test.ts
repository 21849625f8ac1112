/**
 * The docs are held to the code: every back-quoted repository path in README.md and docs/*.md names a
 * file or folder that exists, so a rename that forgets the docs fails here with the doc file and line.
 *
 * What counts as a path — an inline code span outside fenced code blocks that
 *  - has no whitespace and none of `< > { } [ ] * $ … ? = : @ ~ " # , | \` (placeholders, globs, variables,
 *    URLs, host:port, npm scopes, home dirs), does not start with `/` (a host or in-sandbox path such as
 *    `/proc/…`, `/.forkbox/…`, or a URL path such as `/v1`) or `-` (a flag), and has no `..` segment; and
 *  - either ends in a source extension (.ts .js .mjs .cjs .py .sh .md), bare or with folders
 *    (`layer-diff.ts`, `service/diff/heavy-calls.ts`); or ends in a data extension (.json .yaml .yml) and has a
 *    folder (bare `serve.json`, `claude_desktop_config.json` are state or client files, not the repo's);
 *    or has a `/` and either has two or more segments ending in `/` (`deploy/kubernetes/`) or starts with
 *    a top-level entry of the repository (`src/agent`, `.ci/run`). A lone `name/` is not checked (the docs
 *    use it for state-dir folders, `inbox/`, as often as for source folders), nor an extensionless
 *    `a/b` outside the top level: MIME types, MCP methods and image names (`application/json`,
 *    `tools/list`, `microsandbox/python`) look like that.
 *  - Build and test outputs (folders .gitignore names, such as `test-output/`) are not in a clone and are
 *    not checked, except `dist/`, the build of `src/`: `dist/X.js` is checked as `src/X.ts`, and any `.js`
 *    name also resolves to the `.ts` it is built from (`main.js`).
 *
 * A path resolves when it exists from the repository root, from `src/`, or as the tail of any file or
 * folder in the repository (outside node_modules, dist, .git and the ignored folders): docs name a file
 * relative to the folder their paragraph is about (`layers/diff-workers.ts` for
 * src/runtimes/native/layers/diff-workers.ts). NOT_REPO lists the few tokens that pass the rules above
 * and still are not repository paths, each with its reason.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = join(import.meta.dirname, '..', '..');

/** Tokens that look like repository paths but are not, with why. */
const NOT_REPO: ReadonlyMap<string, string> = new Map([
  ['bin/node', "Node's binary in the npm package the container image installs (docs/CONTAINER.md)"],
  ['.cursor/mcp.json', "Cursor's per-project configuration, in the user's project"],
]);

const SOURCE_EXT = /\.(ts|js|mjs|cjs|py|sh|md)$/;
const DATA_EXT = /\.(json|ya?ml)$/;
const NOT_A_PATH = /[\s<>{}[\]*$…?=:@~"#,|\\]/;

/** Folders that builds and tests make: the folder lines of .gitignore (`dist/` among them). */
function outputFolders(): string[] {
  const gitignore = join(ROOT, '.gitignore');
  if (!existsSync(gitignore)) return [];
  return readFileSync(gitignore, 'utf8')
    .split('\n')
    .map((l) => l.trim().replace(/^\//, ''))
    .filter((l) => /^[\w.-]+\/?$/.test(l) && !l.startsWith('*'))
    .map((l) => l.replace(/\/$/, ''));
}

const OUTPUTS = new Set(outputFolders());
const SKIP_WALK = new Set(['node_modules', 'dist', '.git', ...OUTPUTS]);
const TOP_LEVEL = new Set(readdirSync(ROOT).filter((n) => !SKIP_WALK.has(n)));

/** Every file and folder of the repository, as paths relative to ROOT with `/` separators. */
function walk(dir: string, rel: string, out: string[]): string[] {
  for (const name of readdirSync(dir)) {
    if (SKIP_WALK.has(name)) continue;
    const r = rel ? `${rel}/${name}` : name;
    out.push(r);
    if (statSync(join(dir, name)).isDirectory()) walk(join(dir, name), r, out);
  }
  return out;
}

/** The back-quoted spans of a markdown file that are repository paths by the rules above, with lines. */
function pathTokens(text: string): { token: string; line: number }[] {
  const found: { token: string; line: number }[] = [];
  let fenced = false;
  text.split('\n').forEach((line, i) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return;
    }
    if (fenced) return;
    for (const m of line.matchAll(/`([^`]+)`/g)) {
      const token = m[1] ?? '';
      if (isPath(token)) found.push({ token, line: i + 1 });
    }
  });
  return found;
}

function isPath(token: string): boolean {
  if (NOT_A_PATH.test(token) || token.startsWith('/') || token.startsWith('-')) return false;
  const segments = token.split('/');
  if (segments.includes('..')) return false;
  const first = segments[0] ?? '';
  if (OUTPUTS.has(first) && first !== 'dist') return false;
  if (SOURCE_EXT.test(token)) return true;
  if (!token.includes('/')) return false;
  if (DATA_EXT.test(token)) return true;
  if (token.endsWith('/') && segments.length > 2) return true;
  return TOP_LEVEL.has(first) || first === 'dist';
}

describe('docs paths', () => {
  const all = walk(ROOT, '', []);
  const tails = (token: string) => all.some((p) => p.endsWith(`/${token}`) || p === token);

  function resolves(raw: string): boolean {
    const token = raw.replace(/\/$/, '');
    const candidates = [token];
    if (token.startsWith('dist/'))
      candidates.push(`src/${token.slice('dist/'.length).replace(/\.js$/, '.ts')}`);
    else if (token.endsWith('.js')) candidates.push(token.replace(/\.js$/, '.ts'));
    return candidates.some(
      (t) =>
        existsSync(join(ROOT, t)) || existsSync(join(ROOT, 'src', t)) || (!t.startsWith('dist/') && tails(t)),
    );
  }

  const docs = [
    'README.md',
    ...readdirSync(join(ROOT, 'docs'))
      .filter((n) => n.endsWith('.md'))
      .map((n) => `docs/${n}`),
  ];

  it('the rules pick paths and leave other code spans alone', () => {
    const picked = pathTokens(
      [
        '`service/diff/heavy-calls.ts` `layer-diff.ts` `src/agent` `deploy/kubernetes/` `.ci/run`',
        '`/proc/1/mem` `<state>/serve.json` `serve.json` `application/json` `tools/list` `inbox/`',
        '`--flag=/x` `http://h/mcp` `btrfs-*.ts` `root/../..` `$X/y.json` `test-output/console/` `a b.ts`',
        '```',
        '`fenced/away.ts`',
        '```',
      ].join('\n'),
    ).map((t) => t.token);
    assert.deepEqual(picked, [
      'service/diff/heavy-calls.ts',
      'layer-diff.ts',
      'src/agent',
      'deploy/kubernetes/',
      '.ci/run',
    ]);
  });

  it('a wrong name does not resolve, and relative names do', () => {
    assert.equal(resolves('storage/diff-workerz.ts'), false);
    assert.equal(resolves('no-such-file.ts'), false);
    assert.equal(resolves('layers/diff-workers.ts'), true);
    assert.equal(resolves('service/diff/heavy-calls.ts'), true);
    assert.equal(resolves('dist/transports/daemon-client.js'), true);
  });

  it('every back-quoted path in README.md and docs/*.md exists', () => {
    assert.ok(docs.includes('docs/ARCHITECTURE.md'), 'the docs are found');
    const broken: string[] = [];
    let checked = 0;
    for (const doc of docs) {
      for (const { token, line } of pathTokens(readFileSync(join(ROOT, doc), 'utf8'))) {
        if (NOT_REPO.has(token)) continue;
        checked++;
        if (!resolves(token)) broken.push(`${doc}:${line}: \`${token}\``);
      }
    }
    assert.ok(checked > 100, `the rules find the docs' paths (${checked})`);
    assert.deepEqual(broken, [], `paths in the docs that name no file or folder:\n${broken.join('\n')}`);
  });

  it('every allow-listed token still appears in the docs', () => {
    const text = docs.map((d) => readFileSync(join(ROOT, d), 'utf8')).join('\n');
    for (const token of NOT_REPO.keys())
      assert.ok(text.includes(`\`${token}\``), `${token} is no longer used`);
  });
});
