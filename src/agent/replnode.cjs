'use strict';
/*
 * The persistent Node.js REPL's driver: `node replnode.cjs`, started by the agent (noderepl.py) on the
 * first `repl.eval` with language node, as a process of the sandbox (its limits, its cgroups).
 *
 * fd 3 is a socketpair to the agent, with the same framing and messages as the Python worker
 * (worker.py): {t: "eval", id, code, max_output_bytes} in; {t: "started", id}, then {t: "result", id} +
 * a JSON body out. fds 1 and 2 are pipes the agent reads for the whole life of the process: everything a
 * cell writes before its result is that cell's output (the result is sent only once both have drained).
 *
 * Each cell runs in one `vm` context through the `repl` module's own evaluator: declarations persist,
 * top-level await works, `_` is the last value, and SIGINT (the agent's timeout or cancel) interrupts a
 * running cell. This process runs user code: the agent treats it as untrusted.
 * Written for Node >= 16 (CommonJS, so a package.json in the sandbox cannot turn it into a module).
 */
const net = require('node:net');
const repl = require('node:repl');
const util = require('node:util');
const { PassThrough, Writable } = require('node:stream');

// The agent's bounds (bounds.py, from the host), handed over as argv[2]: no numbers of this driver's own.
const BOUNDS = JSON.parse(process.argv[2] || 'null');
process.argv.splice(2, 1); // cells see the argv of a plain `node` REPL
if (!BOUNDS || !(BOUNDS.frame_header_bytes > 0) || !(BOUNDS.frame_body_bytes > 0)) {
  process.stderr.write('replnode.cjs: started without the bounds (argv[2]); the agent starts it\n');
  process.exit(2);
}
const MAX_HEADER = BOUNDS.frame_header_bytes;
const MAX_BODY = BOUNDS.frame_body_bytes;
const DEFAULT_CAP = BOUNDS.default_output_bytes;
const INTERNAL_FRAME = /^\s+at (.*\(node:|node:|.*replnode\.cjs)/;

const ctl = new net.Socket({ fd: 3, readable: true, writable: true });
// Writes to a pipe are only tried at once on Linux: what the pipe cannot take waits in Node's memory,
// without bound for a print loop. Blocking writes make a full pipe (the agent reading at the host's pace)
// hold the writer instead, as it holds a Python print.
for (const s of [process.stdout, process.stderr]) s._handle?.setBlocking?.(true);
// Errors thrown later by a cell's callbacks (timers, events) are printed by the REPL: to stderr.
const errOut = new Writable({
  write(chunk, _enc, cb) {
    process.stderr.write(chunk, cb);
  },
});
const server = repl.start({
  input: new PassThrough(),
  output: errOut,
  prompt: '',
  terminal: false,
  useGlobal: false,
  breakEvalOnSigint: true,
});
// The REPL's context prints console output to its `output`; cells print to the process's stdout/stderr.
server.context.console = console;
// A cell's thrown error reaches the REPL's domain, not the eval's callback: it ends the cell in flight.
// An error whose stack names only earlier cells came from a callback one of them left behind (a timer):
// printed to stderr, as is any error while no cell is in flight.
let finishCell = null;
const domain = server._domain;
if (domain) {
  domain.removeAllListeners('error');
  domain.on('error', (e) => {
    if (finishCell !== null && !fromEarlierCell(e)) finishCell(e, undefined);
    else process.stderr.write(`Uncaught ${errorOf(e).traceback}\n`);
  });
}

function fromEarlierCell(e) {
  const stack = e !== null && typeof e === 'object' && typeof e.stack === 'string' ? e.stack : '';
  const named = [...stack.matchAll(/\bcell-(\d+):/g)].map((m) => Number(m[1]));
  return named.length > 0 && !named.includes(cells);
}
// No SIGINT listener of our own: the REPL's watchdog handles SIGINT while a cell runs, and a listener
// would disarm it (vm resets SIGINT to its default when it takes the listeners off during a cell).

function send(header, body) {
  const h = Buffer.from(JSON.stringify(header), 'utf8');
  const b = body ?? Buffer.alloc(0);
  const lens = Buffer.alloc(8);
  lens.writeUInt32BE(h.length, 0);
  lens.writeUInt32BE(b.length, 4);
  ctl.write(Buffer.concat([lens, h, b]));
}

function drained(stream) {
  if (stream.writableLength === 0) return Promise.resolve();
  return new Promise((resolve) => stream.once('drain', resolve));
}

function stackOf(e) {
  const text = typeof e.stack === 'string' ? e.stack : String(e);
  return text
    .split('\n')
    .filter((line) => !INTERNAL_FRAME.test(line))
    .join('\n');
}

function errorOf(e) {
  if (e instanceof repl.Recoverable) {
    const inner = e.err ?? e;
    return { type: 'SyntaxError', message: `incomplete input: ${inner.message}`, traceback: stackOf(inner) };
  }
  if (e !== null && typeof e === 'object' && typeof e.message === 'string') {
    const type = typeof e.name === 'string' && e.name ? e.name : 'Error';
    return { type, message: e.message, traceback: stackOf(e) };
  }
  const shown = util.inspect(e);
  return { type: 'Uncaught', message: shown, traceback: `Uncaught ${shown}` };
}

let cells = 0;
let running = false;
let onSigint = null;
const waiting = [];

function runCell(header) {
  const id = header.id;
  const code = typeof header.code === 'string' ? header.code : '';
  const cap =
    Number.isInteger(header.max_output_bytes) && header.max_output_bytes >= 0
      ? header.max_output_bytes
      : DEFAULT_CAP;
  const t0 = performance.now();
  cells += 1;
  running = true;
  send({ t: 'started', id });
  let done = false;
  const finish = async (err, value) => {
    if (done) return; // a second answer for this cell (an error the domain saw first)
    done = true;
    if (finishCell === finish) finishCell = null;
    if (onSigint !== null) process.removeListener('SIGINT', onSigint);
    onSigint = null;
    let text = null;
    let error = null;
    let interrupted = false;
    if (err) {
      error = errorOf(err);
      interrupted = err?.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED';
      server.lastError = err;
    } else if (value !== undefined) {
      server.last = value;
      try {
        text = util.inspect(value);
      } catch (e) {
        text = `<inspect failed: ${e}>`;
      }
    }
    const truncated = text !== null && text.length > cap;
    if (truncated) text = `${text.slice(0, cap)}...`;
    await Promise.all([drained(process.stdout), drained(process.stderr)]);
    const result = {
      ok: error === null,
      value: text,
      error,
      timed_out: false,
      interrupted,
      restarted: false,
      truncated,
      images: [],
      duration_ms: performance.now() - t0,
    };
    let body = Buffer.from(JSON.stringify(result), 'utf8');
    if (body.length > MAX_BODY - 4096) {
      result.value = text.slice(0, 1 << 20);
      result.truncated = true;
      body = Buffer.from(JSON.stringify(result), 'utf8');
    }
    send({ t: 'result', id }, body);
    running = false;
    const next = waiting.shift();
    if (next !== undefined) runCell(next);
  };
  finishCell = finish;
  server.eval(code, server.context, `cell-${cells}`, (err, value) => finish(err, value));
  if (!done) {
    // A cell awaiting a promise (top-level await): its code has returned, the watchdog is off. A SIGINT
    // now ends the wait (the promise is abandoned; whatever it still does runs on in the background).
    onSigint = () => {
      const e = new Error('Script execution was interrupted by `SIGINT` while awaiting');
      e.code = 'ERR_SCRIPT_EXECUTION_INTERRUPTED';
      e.stack = `Error: ${e.message}`;
      finish(e, undefined);
    };
    process.on('SIGINT', onSigint);
  }
}

let pending = Buffer.alloc(0);
ctl.on('data', (chunk) => {
  pending = Buffer.concat([pending, chunk]);
  while (pending.length >= 8) {
    const hl = pending.readUInt32BE(0);
    const bl = pending.readUInt32BE(4);
    if (hl < 2 || hl > MAX_HEADER || bl > MAX_BODY) process.exit(1);
    if (pending.length < 8 + hl + bl) return;
    const header = JSON.parse(pending.subarray(8, 8 + hl).toString('utf8'));
    pending = pending.subarray(8 + hl + bl);
    if (header.t !== 'eval') process.exit(1);
    if (running) waiting.push(header);
    else runCell(header);
  }
});
ctl.on('end', () => process.exit(0));
ctl.on('error', () => process.exit(1));
