/** `forkbox eval ID CODE`: run Python (or, with --language node, JavaScript) in the sandbox's persistent REPL. */
import type { Command } from 'commander';
import type { CodeRunRequest } from '../../service/api.ts';
import type { ReplResult } from '../../service/ports.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { readPipedStdin } from '../exec-stream.ts';
import { trapInterrupts } from '../interrupt.ts';
import type { Output } from '../output/output.ts';
import { parseDuration, parseReplLanguage } from '../parse.ts';

function render(r: ReplResult, out: Output): void {
  if (out.json) {
    out.result(r, () => '');
    return;
  }
  if (r.stdout !== '') process.stdout.write(r.stdout);
  if (r.stderr !== '') process.stderr.write(r.stderr);
  if (r.value !== null) process.stdout.write(`${r.value}\n`);
  if (r.error) process.stderr.write(r.error.traceback || `${r.error.type}: ${r.error.message}\n`);
  if (r.images.length > 0) out.note(`${r.images.length} image(s) not shown (use --json to get them)`);
  if (r.timedOut) out.note('timed out');
  if (r.oomKilled) out.note('out of memory');
  if (r.truncated) out.note('output truncated');
  if (r.restarted) out.note('the REPL was restarted: its state was lost');
}

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'eval')
    .argument('<id>', 'sandbox id or name')
    .argument('<code>', "the code, or '-' to read it from stdin")
    .option('--timeout <duration>', 'interrupt the code after this long, e.g. 30s', parseDuration)
    .option(
      '--language <language>',
      'python (default) or node: the persistent Node.js REPL',
      parseReplLanguage,
    )
    .action(async (id: string, code: string, o: { timeout?: number; language?: 'python' | 'node' }) => {
      // Ctrl-C aborts the request: the daemon interrupts the code (the REPL keeps its state when it can).
      const trap = trapInterrupts();
      try {
        const api = await trap.settle(ctx.api({ signal: trap.signal }));
        const text = code === '-' ? ((await trap.settle(readPipedStdin()))?.toString('utf8') ?? '') : code;
        const req: CodeRunRequest = { language: o.language ?? 'python', code: text };
        if (o.timeout !== undefined) req.timeoutSeconds = o.timeout;
        const r = await trap.settle(api.runCode(id, req));
        render(r, ctx.out());
        if (!r.ok) ctx.setExitCode(1);
      } finally {
        trap.release();
      }
    });
}
