/** The /v1 handlers of commands and code: run (JSON or streamed NDJSON), background execs, polling, stdin, cancel; the browser. */

import type { BrowserAction } from '../../domain/browser.ts';
import {
  type ApiFor,
  chunkLine,
  execIdParam,
  type Handlers,
  idParam,
  jsonBody,
  ndjson,
  peekLine,
  rawBody,
  stripUndefined,
  wantsNdjson,
} from './handler-support.ts';
import {
  browserBody,
  codeBody,
  execBody,
  parseOrThrow,
  pollQuery,
  resizeBody,
  startExecBody,
  stdinQuery,
} from './local-schemas.ts';

export function execHandlers(A: ApiFor) {
  return {
    exec: async (c) => {
      const { stdin, ...rest } = parseOrThrow(execBody, await jsonBody(c), 'exec request');
      const req = {
        ...stripUndefined(rest),
        ...(stdin === undefined ? {} : { stdin: Buffer.from(stdin, 'base64') }),
      };
      // A client that goes away (disconnect, Ctrl-C of the CLI) cancels the command's whole process tree.
      const signal = c.req.raw.signal;
      if (!wantsNdjson(c)) return c.json(await A(c).exec(idParam(c), req, { signal }));
      return ndjson(c, (emit) =>
        A(c).exec(idParam(c), req, {
          signal,
          onStarted: (execId) => emit({ type: 'started', execId }),
          onOutput: (ch) => emit(chunkLine(ch)),
          onPeek: (p) => emit(peekLine(p)),
        }),
      );
    },
    startExec: async (c) => {
      const body = parseOrThrow(startExecBody, await jsonBody(c), 'exec request');
      return c.json(await A(c).startExec(idParam(c), stripUndefined(body)), 201);
    },
    listExecs: async (c) => c.json(await A(c).listExecs(idParam(c))),
    pollExec: async (c) => {
      const q = parseOrThrow(pollQuery, c.req.query(), 'query');
      const o: { afterSeq?: number; waitMs?: number } = {};
      if (q.after_seq !== undefined) o.afterSeq = q.after_seq;
      if (q.wait_ms !== undefined) o.waitMs = q.wait_ms;
      return c.json(await A(c).pollExec(idParam(c), execIdParam(c), o));
    },
    writeStdin: async (c) => {
      const q = parseOrThrow(stdinQuery, c.req.query(), 'query');
      await A(c).writeExecStdin(idParam(c), execIdParam(c), await rawBody(c), q.eof ?? false);
      return c.json({ ok: true });
    },
    resizeExec: async (c) => {
      const size = parseOrThrow(resizeBody, await jsonBody(c), 'terminal size');
      await A(c).resizeExec(idParam(c), execIdParam(c), size);
      return c.json({ ok: true });
    },
    cancelExec: async (c) => c.json(await A(c).cancelExec(idParam(c), execIdParam(c))),
    runCode: async (c) => {
      const req = stripUndefined(parseOrThrow(codeBody, await jsonBody(c), 'code request'));
      // A client that goes away cancels the code (KeyboardInterrupt, then a REPL restart if it must).
      const signal = c.req.raw.signal;
      if (!wantsNdjson(c)) return c.json(await A(c).runCode(idParam(c), req, { signal }));
      return ndjson(c, (emit) =>
        A(c).runCode(idParam(c), req, { signal, onOutput: (ch) => emit(chunkLine(ch)) }),
      );
    },
    browser: async (c) => {
      const action = stripUndefined(parseOrThrow(browserBody, await jsonBody(c), 'browser action'));
      return c.json(await A(c).browser(idParam(c), action as BrowserAction));
    },
    resetCode: async (c) => {
      await A(c).resetCode(idParam(c));
      return c.json({ ok: true });
    },
  } satisfies Handlers;
}
