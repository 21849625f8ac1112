/**
 * docs/AGENT-PROTOCOL.md is held to the agent (src/agent/*.py) and to the host's side of the link
 * (src/runtimes/native/agent-link/): the ops it documents are the ops the agent dispatches, and its error
 * code table is the set of codes the agent can send, with the forkbox code the host turns each into.
 * The Python is read as text (regexes, no interpreter).
 *
 * The agent's side:
 *  - ops: the string literals compared with `op` (`op == "x"`, `op in ("x", …)`, `case "x"`) in agent.py's
 *    `_request`, plus the keys of every table `_request` looks ops up in (`OPS.get(op)`: the dict
 *    `OPS = {…}` at the top level of agent.py, the agent's one op table; `mod.X.get(op)` reads mod.py).
 *  - error codes: the first argument of `OpError(…)`, `SpawnError(…)`, `_refuse_all(…)`, the third of
 *    `send_error(…)`, and every `"code": …` value; a literal is a code, `code`/`e.code` pass on a code made
 *    elsewhere, `X.get(…, "y")` / `… or "y"` add their default, and `ERRNO_CODES.get` adds the values of
 *    spawner.py's `ERRNO_CODES`. Any other expression fails the test (teach it the new form).
 * The doc's side:
 *  - ops: every `### ` heading in "## Operations" that begins with a back-quoted name (`### \`exec\``);
 *    other headings (`### Output of …`, `### The agent's \`log\` frames`) are prose.
 *  - error codes: the table after the line starting "Error codes in `error.code`", one row per code:
 *    | `code` | when the agent sends it | `forkbox code` |; the last cell must be what
 *    agent-connection.ts's AGENT_ERRORS maps it to (`internal` when it has no entry).
 * And every op the host sends (`.request('x'` / `.stream('x'` under src/runtimes/native/) is one the
 * agent dispatches.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = join(import.meta.dirname, '..', '..');
const AGENT = join(ROOT, 'src', 'agent');
const DOC = join(ROOT, 'docs', 'AGENT-PROTOCOL.md');
const CONNECTION = join(ROOT, 'src', 'runtimes', 'native', 'agent-link', 'agent-connection.ts');

const STR = String.raw`"([^"\\]*)"|'([^'\\]*)'`;
const lit = (m: RegExpMatchArray, i = 1): string => m[i] ?? m[i + 1] ?? '';

/** The body of the `def` (function or method) `name` in Python source: up to the next line as shallow. */
function pyBlock(src: string, name: string): string | null {
  const m = new RegExp(String.raw`^([ \t]*)def ${name}\(`, 'm').exec(src);
  if (!m) return null;
  const indent = m[1] ?? '';
  const rest = src.slice(m.index + m[0].length);
  // The next non-blank line that is not indented deeper than the `def`.
  const end = new RegExp(String.raw`^(?![ \t]*$)(?!${indent}[ \t])`, 'm').exec(rest.replace(/^.*\n/, ''));
  const firstLine = rest.indexOf('\n') + 1;
  return end ? rest.slice(0, firstLine + end.index) : rest;
}

/** The string keys (or the string values) of a top-level `NAME = { … }` dict. */
function pyDict(src: string, name: string, part: 'keys' | 'values'): string[] | null {
  const m = new RegExp(String.raw`^${name}\s*=\s*\{([\s\S]*?)^\}`, 'm').exec(src);
  if (!m) return null;
  const re =
    part === 'keys'
      ? new RegExp(String.raw`^\s*(?:${STR})\s*:`, 'gm')
      : new RegExp(String.raw`:\s*(?:${STR})\s*,?\s*(?:#.*)?$`, 'gm');
  return [...(m[1] ?? '').matchAll(re)].map((x) => lit(x));
}

/** Ops the agent dispatches: the comparisons in `_request`'s body and the keys of the tables it looks in. */
function agentOps(sources: ReadonlyMap<string, string>): string[] {
  const main = sources.get('agent.py');
  assert.ok(main, 'src/agent/agent.py is read');
  const body = pyBlock(main, '_request');
  assert.ok(body, 'agent.py has a `def _request(` (the op dispatch): if it moved, teach this test where');
  const ops = new Set<string>();
  for (const m of body.matchAll(new RegExp(String.raw`\bop\s*==\s*(?:${STR})`, 'g'))) ops.add(lit(m));
  for (const m of body.matchAll(new RegExp(String.raw`\bcase\s+(?:${STR})`, 'g'))) ops.add(lit(m));
  for (const m of body.matchAll(/\bop\s+in\s+[([{]([^)\]}]*)[)\]}]/g))
    for (const s of (m[1] ?? '').matchAll(new RegExp(STR, 'g'))) ops.add(lit(s));
  for (const m of body.matchAll(/\b(?:(\w+)\.)?([A-Z_][A-Z0-9_]*)(?:\.get\(\s*op\b|\[\s*op\s*\])/g)) {
    const file = m[1] ? `${m[1]}.py` : 'agent.py';
    const src = sources.get(file);
    assert.ok(src, `_request looks ops up in ${m[0]}, but src/agent/${file} is not there`);
    const keys = pyDict(src, m[2] ?? '', 'keys');
    assert.ok(keys && keys.length > 0, `the op table ${m[2]} in src/agent/${file} is found and not empty`);
    for (const k of keys) ops.add(k);
  }
  return [...ops].sort();
}

/** Splits a call's argument text at top-level commas. */
function args(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let cur = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i] ?? '';
    if (quote) {
      if (c === '\\') {
        cur += c + (text[++i] ?? '');
        continue;
      }
      if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) {
      if (depth === 0) break;
      depth--;
    } else if (c === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
      continue;
    }
    cur += c;
  }
  out.push(cur.trim());
  return out;
}

/** The codes an error-code expression can yield ([] when it passes on a code made elsewhere), or null. */
function codesOf(expr: string, errnoCodes: readonly string[]): string[] | null {
  const whole = new RegExp(`^(?:${STR})$`).exec(expr);
  if (whole) return [lit(whole)];
  if (/^(?:e\.code|code)$/.test(expr)) return [];
  const out: string[] = [];
  if (/\bERRNO_CODES\.get\(/.test(expr)) out.push(...errnoCodes);
  // A default: `str(err.get("code") or "internal")`, `ERRNO_CODES.get(e.errno, "internal")`.
  const dflt = new RegExp(String.raw`(?:\bor\s+|,\s*)(?:${STR})\s*\)*$`).exec(expr);
  if (dflt) out.push(lit(dflt));
  return out.length > 0 ? out : null;
}

/** Error codes the agent can send, and the expressions this test could not read. */
function agentCodes(sources: ReadonlyMap<string, string>): { codes: string[]; unknown: string[] } {
  const spawner = sources.get('spawner.py') ?? '';
  const errnoCodes = pyDict(spawner, 'ERRNO_CODES', 'values') ?? [];
  assert.ok(errnoCodes.length > 0, "spawner.py's ERRNO_CODES (errno → code) is found");
  const codes = new Set<string>();
  const unknown: string[] = [];
  const take = (file: string, src: string, at: number, expr: string) => {
    const c = codesOf(expr, errnoCodes);
    if (c === null) unknown.push(`src/agent/${file}:${src.slice(0, at).split('\n').length}: ${expr}`);
    else for (const x of c) codes.add(x);
  };
  for (const [file, src] of sources) {
    for (const m of src.matchAll(/\b(OpError|SpawnError|_refuse_all|send_error)\(/g)) {
      if (/\bdef\s+$/.test(src.slice(Math.max(0, (m.index ?? 0) - 8), m.index))) continue;
      if (/class\s+$/.test(src.slice(Math.max(0, (m.index ?? 0) - 8), m.index))) continue;
      const a = args(src.slice((m.index ?? 0) + m[0].length));
      const expr = m[1] === 'send_error' ? a[2] : a[0];
      if (expr === undefined || expr === '') continue;
      take(file, src, m.index ?? 0, expr);
    }
    for (const m of src.matchAll(/["']code["']\s*:\s*/g)) {
      const start = (m.index ?? 0) + m[0].length;
      const expr = args(src.slice(start))[0] ?? '';
      // `"code": a["code"]` is the REPL's code text in an eval message, not an error code.
      if (/^a\[/.test(expr)) continue;
      take(file, src, m.index ?? 0, expr);
    }
    // The errno table feeds codes through `code = _ERRNO_CODES.get(...)` (fileio's oserror).
    if (/_?ERRNO_CODES\.get\(/.test(src)) for (const x of errnoCodes) codes.add(x);
  }
  return { codes: [...codes].sort(), unknown };
}

/** The `### \`op\`` headings of the doc's "## Operations" section. */
function docOps(doc: string): string[] {
  const start = doc.search(/^## Operations\s*$/m);
  assert.ok(start >= 0, 'the doc has a "## Operations" section');
  const rest = doc.slice(start + 1);
  const end = rest.search(/^## /m);
  const section = end >= 0 ? rest.slice(0, end) : rest;
  return [...section.matchAll(/^### `([^`]+)`/gm)].map((m) => m[1] ?? '').sort();
}

/** The doc's error code table: code → the forkbox code in its last cell. */
function docCodes(doc: string): Map<string, string> {
  const lines = doc.split('\n');
  const at = lines.findIndex((l) => l.startsWith('Error codes in `error.code`'));
  assert.ok(at >= 0, 'the doc has a line starting "Error codes in `error.code`"');
  const out = new Map<string, string>();
  let i = at + 1;
  while (i < lines.length && !(lines[i] ?? '').startsWith('|')) i++;
  for (; i < lines.length && (lines[i] ?? '').startsWith('|'); i++) {
    const cells = (lines[i] ?? '')
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    const code = /^`([a-z_]+)`$/.exec(cells[0] ?? '');
    if (!code) continue; // header and separator rows
    const host = /^`([a-z_]+)`/.exec(cells[cells.length - 1] ?? '');
    out.set(code[1] ?? '', host?.[1] ?? '');
  }
  return out;
}

/** agent-connection.ts's AGENT_ERRORS: agent code → forkbox code. */
function hostMap(src: string): Map<string, string> {
  const m = /const AGENT_ERRORS\b[^=]*=\s*\{([\s\S]*?)\};/.exec(src);
  assert.ok(m, 'agent-connection.ts has its AGENT_ERRORS table');
  return new Map([...(m[1] ?? '').matchAll(/(\w+):\s*'(\w+)'/g)].map((x) => [x[1] ?? '', x[2] ?? '']));
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

const sources = new Map(
  readdirSync(AGENT)
    .filter((n) => n.endsWith('.py'))
    .map((n) => [n, readFileSync(join(AGENT, n), 'utf8')] as const),
);
const doc = readFileSync(DOC, 'utf8');
const missing = (want: Iterable<string>, have: Iterable<string>) => {
  const h = new Set(have);
  return [...want].filter((x) => !h.has(x));
};

describe('docs/AGENT-PROTOCOL.md against the agent', () => {
  it('the readers work on a sample', () => {
    const py = new Map([
      [
        'agent.py',
        [
          'class A:',
          '    def _request(self, conn, op, a):',
          '        handler = ops.OPS.get(op)',
          '        if op == "ping":',
          '            raise OpError("busy", "x, y")',
          '        elif op in ("a.b", \'c\'):',
          '            self.send_error(conn, rid, "gone", "m")',
          '',
          '    def other(self):',
          '        if op == "not.this":',
          '            pass',
        ].join('\n'),
      ],
      ['ops.py', 'OPS = {\n    "file.x": f,\n}\n'],
      [
        'spawner.py',
        'ERRNO_CODES = {\n    errno.ENOENT: "nf",\n}\nraise SpawnError(e.code, m)\nx = {"code": weird()}\n',
      ],
    ]);
    assert.deepEqual(agentOps(py), ['a.b', 'c', 'file.x', 'ping']);
    const last = pyBlock(
      'class A:\n    def _request(self):\n        x = 1\n\ndef top():\n    y = 2\n',
      '_request',
    );
    assert.ok(
      last?.includes('x = 1') && !last.includes('y = 2'),
      'a method last in its class ends at the next top-level line',
    );
    const c = agentCodes(py);
    assert.deepEqual(c.codes, ['busy', 'gone']);
    assert.deepEqual(c.unknown, ['src/agent/spawner.py:5: weird()']);
    const d =
      '## Operations\n\n### `ping`\n\n### Output of `exec`\n\n### `repl.interrupt` → `{}`\n\n## Next\n### `x`';
    assert.deepEqual(docOps(d), ['ping', 'repl.interrupt']);
    const t =
      'Error codes in `error.code`:\n\n| code | when | host |\n| - | - | - |\n| `busy` | a, b | `busy` |\n';
    assert.deepEqual([...docCodes(t)], [['busy', 'busy']]);
  });

  const ops = agentOps(sources);
  const codes = agentCodes(sources);

  it('the agent sources are read', () => {
    assert.ok(ops.includes('exec') && ops.includes('file.read'), `ops found: ${ops.join(', ')}`);
    assert.ok(codes.codes.includes('bad_request') && codes.codes.includes('internal'), 'codes found');
    assert.deepEqual(codes.unknown, [], 'error-code expressions this test cannot read');
  });

  it('every op the agent dispatches has its section, and every section is an op', () => {
    const documented = docOps(doc);
    assert.deepEqual(
      missing(ops, documented),
      [],
      'ops the agent dispatches that docs/AGENT-PROTOCOL.md omits',
    );
    assert.deepEqual(
      missing(documented, ops),
      [],
      'ops docs/AGENT-PROTOCOL.md documents that the agent lacks',
    );
  });

  it('the error code table lists exactly the codes the agent sends', () => {
    const documented = [...docCodes(doc).keys()];
    assert.deepEqual(missing(codes.codes, documented), [], 'codes the agent sends that the doc omits');
    assert.deepEqual(missing(documented, codes.codes), [], 'codes in the doc that the agent never sends');
  });

  it("the error code table's forkbox codes are the host's", () => {
    const host = hostMap(readFileSync(CONNECTION, 'utf8'));
    const wrong = [...docCodes(doc)]
      .filter(([code, said]) => said !== (host.get(code) ?? 'internal'))
      .map(
        ([code, said]) =>
          `${code}: the doc says ${said || '(nothing)'}, the host makes ${host.get(code) ?? 'internal'}`,
      );
    assert.deepEqual(wrong, []);
  });

  it('every op the host sends is one the agent dispatches', () => {
    const sent = new Set<string>();
    for (const f of files(join(ROOT, 'src', 'runtimes', 'native')))
      for (const m of readFileSync(f, 'utf8').matchAll(/\.(?:request|stream)\(\s*'([a-z][a-z.]*)'/g))
        sent.add(m[1] ?? '');
    assert.ok(sent.has('exec') && sent.has('exec.spawner'), `host ops found: ${[...sent].join(', ')}`);
    assert.deepEqual(missing(sent, ops), []);
  });
});
