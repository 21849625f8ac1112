/** `forkbox eval ID CODE`: run Python in the sandbox's persistent REPL. */
import type { Command } from 'commander';
import type { CodeRunRequest } from '../../service/api.ts';
import type { CliContext } from '../context.ts';
import { readPipedStdin } from '../exec-stream.ts';
import { parseDuration } from '../parse.ts';

export function register(program: Command, ctx: CliContext): void {
  program
    .command('eval')
    .description(
      "run Python code in the sandbox's REPL (state persists between calls); prints output and the value",
    )
    .argument('<id>', 'sandbox id or name')
    .argument('<code>', "Python code, or '-' to read it from stdin")
    .option('--timeout <duration>', 'interrupt the code after this long, e.g. 30s', parseDuration)
    .action(async (id: string, code: string, o: { timeout?: number }) => {
      const api = await ctx.api();
      const out = ctx.out();
      const text = code === '-' ? ((await readPipedStdin())?.toString('utf8') ?? '') : code;
      const req: CodeRunRequest = { language: 'python', code: text };
      if (o.timeout !== undefined) req.timeoutSeconds = o.timeout;
      const r = await api.runCode(id, req);
      if (out.json) out.result(r, () => '');
      else {
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
      if (!r.ok) ctx.setExitCode(1);
    });
}
