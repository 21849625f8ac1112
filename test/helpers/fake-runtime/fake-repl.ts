/**
 * A toy stand-in for a sandbox's Python REPL: a namespace that persists across calls, is copied into
 * forked children and is lost on restart — the properties the service layer relies on. It understands
 * one statement per line: `name = expr`, `name += expr`, `import a, b`, `print(expr, ...)`,
 * `raise Name('message')`, `time.sleep(s)`, `while True: pass`, and a bare expression (its repr is the
 * value) over int/str/bool/None literals, names, `+ - * / // %`, parentheses, `len()` and `str()`.
 * Anything else is a SyntaxError naming the fake. Python itself is proven by the native runtime's tests.
 */
import type { ReplResult } from '../../../src/service/ports.ts';

type Value = number | string | boolean | null;

class PyError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

export function repr(v: Value): string {
  if (v === null) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return String(v);
  return `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}
const str = (v: Value) => (typeof v === 'string' ? v : repr(v));

function tokenize(src: string): string[] {
  const re =
    /\s*(\d+(?:\.\d+)?|'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_.]*|\/\/|[-+*/%(),])/y;
  const out: string[] = [];
  let i = 0;
  while (i < src.length) {
    if (/^\s*$/.test(src.slice(i))) break;
    re.lastIndex = i;
    const m = re.exec(src);
    if (!m) throw new PyError('SyntaxError', `the fake REPL does not understand: ${src}`);
    out.push(m[1] as string);
    i = re.lastIndex;
  }
  return out;
}

function evaluate(src: string, vars: Map<string, Value>): Value {
  const toks = tokenize(src);
  let i = 0;
  const peek = () => toks[i];
  const take = (t?: string) => {
    const v = toks[i++];
    if (t !== undefined && v !== t) throw new PyError('SyntaxError', `expected '${t}' in: ${src}`);
    return v as string;
  };
  function num(v: Value): number {
    if (typeof v !== 'number') throw new PyError('TypeError', `unsupported operand type: ${repr(v)}`);
    return v;
  }
  function factor(): Value {
    const t = take();
    if (t === undefined) throw new PyError('SyntaxError', `unexpected end of: ${src}`);
    if (t === '(') {
      const v = expr();
      take(')');
      return v;
    }
    if (t === '-') return -num(factor());
    if (/^\d/.test(t)) return Number(t);
    if (t[0] === "'" || t[0] === '"') return t.slice(1, -1).replace(/\\(.)/g, '$1');
    if (t === 'True' || t === 'False') return t === 'True';
    if (t === 'None') return null;
    if (peek() === '(') {
      take('(');
      const arg = expr();
      take(')');
      if (t === 'len' && typeof arg === 'string') return arg.length;
      if (t === 'str') return str(arg);
      throw new PyError('SyntaxError', `the fake REPL has no function ${t}()`);
    }
    if (!vars.has(t)) throw new PyError('NameError', `name '${t}' is not defined`);
    return vars.get(t) as Value;
  }
  function term(): Value {
    let v = factor();
    while (['*', '/', '//', '%'].includes(peek() ?? '')) {
      const op = take();
      const r = factor();
      if (op === '*') v = typeof v === 'string' ? v.repeat(num(r)) : num(v) * num(r);
      else {
        if (num(r) === 0) throw new PyError('ZeroDivisionError', 'division by zero');
        v = op === '/' ? num(v) / num(r) : op === '//' ? Math.floor(num(v) / num(r)) : num(v) % num(r);
      }
    }
    return v;
  }
  function expr(): Value {
    let v = term();
    while (peek() === '+' || peek() === '-') {
      const op = take();
      const r = term();
      if (op === '+' && typeof v === 'string' && typeof r === 'string') v += r;
      else v = op === '+' ? num(v) + num(r) : num(v) - num(r);
    }
    return v;
  }
  const v = expr();
  if (i < toks.length) throw new PyError('SyntaxError', `the fake REPL does not understand: ${src}`);
  return v;
}

export interface ReplIo {
  /** Wait; rejects when the eval is interrupted (timeout). */
  sleep(ms: number): Promise<void>;
}

export class FakeRepl {
  vars = new Map<string, Value>();
  modules = new Set<string>();

  clone(): FakeRepl {
    const r = new FakeRepl();
    r.vars = new Map(this.vars);
    r.modules = new Set(this.modules);
    return r;
  }

  restart(): void {
    this.vars.clear();
    this.modules.clear();
  }

  async eval(code: string, io: ReplIo): Promise<Omit<ReplResult, 'timedOut' | 'durationMs'>> {
    let stdout = '';
    let value: string | null = null;
    const lines = code
      .replace(/while True:\s*\n\s+pass/g, 'while True: pass')
      .split('\n')
      .filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));
    const vars = this.vars;
    const statements: [RegExp, (m: RegExpExecArray) => Promise<void> | void][] = [
      [/^import\s+(.+)$/, (m) => void (m[1] as string).split(',').map((x) => this.modules.add(x.trim()))],
      [/^while True: pass$/, () => io.sleep(Number.POSITIVE_INFINITY)],
      [/^time\.sleep\((.+)\)$/, (m) => io.sleep(Number(evaluate(m[1] as string, vars)) * 1000)],
      [
        /^print\((.*)\)$/,
        (m) => {
          const args = (m[1] as string).trim() === '' ? [] : splitArgs(m[1] as string);
          stdout += `${args.map((a) => str(evaluate(a, vars))).join(' ')}\n`;
        },
      ],
      [
        /^raise\s+([A-Za-z_]\w*)(?:\((.*)\))?$/,
        (m) => {
          throw new PyError(m[1] as string, m[2] ? str(evaluate(m[2], vars)) : '');
        },
      ],
      [
        /^([A-Za-z_]\w*)\s*(\+?=)\s*([^=].*)$/,
        (m) => {
          const name = m[1] as string;
          vars.set(name, evaluate(m[2] === '+=' ? `${name} + (${m[3]})` : (m[3] as string), vars));
        },
      ],
    ];
    try {
      for (const [n, raw] of lines.entries()) {
        const line = raw.trim();
        const hit = statements.map(([re, fn]) => [re.exec(line), fn] as const).find(([m]) => m !== null);
        if (hit?.[0]) {
          await hit[1](hit[0]);
          continue;
        }
        const v = evaluate(line, vars);
        if (n === lines.length - 1 && v !== null) value = repr(v);
      }
    } catch (e) {
      if (!(e instanceof PyError)) throw e;
      return result(false, null, stdout, {
        type: e.type,
        message: e.message,
        traceback: `Traceback (most recent call last):\n  File "<forkbox>", line 1, in <module>\n${e.type}: ${e.message}\n`,
      });
    }
    return result(true, value, stdout, null);
  }
}

function splitArgs(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let cur = '';
  for (const c of s) {
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      out.push(cur);
      cur = '';
      continue;
    }
    cur += c;
  }
  out.push(cur);
  return out;
}

function result(
  ok: boolean,
  value: string | null,
  stdout: string,
  error: ReplResult['error'],
): Omit<ReplResult, 'timedOut' | 'durationMs'> {
  return {
    ok,
    value,
    stdout,
    stderr: '',
    error,
    interrupted: false,
    restarted: false,
    truncated: false,
    oomKilled: false,
    images: [],
  };
}
