/** `forkbox doctor`: check every host requirement and say how to fix what is missing. */
import type { Command } from 'commander';
import { ERROR_CODES } from '../../domain/errors.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';

interface DoctorCheck {
  name: string;
  ok: boolean;
  required: boolean;
  detail: string;
  fix?: string;
}

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'doctor').action(async () => {
    const out = ctx.out();
    // Loaded lazily like the engine: the checks probe the host and are only needed here.
    const { runDoctorChecks } = await import('../doctor-checks.ts');
    const checks: DoctorCheck[] = await runDoctorChecks({ stateDir: ctx.globals().stateDir });
    const failedRequired = checks.filter((c) => c.required && !c.ok);
    out.result({ ok: failedRequired.length === 0, checks }, () => {
      const lines: string[] = [];
      for (const c of checks) {
        const mark = c.ok ? 'ok  ' : c.required ? 'FAIL' : 'warn';
        lines.push(`[${mark}] ${c.name}: ${c.detail}`);
        if (!c.ok && c.fix) lines.push(`       fix: ${c.fix}`);
      }
      lines.push(
        failedRequired.length === 0
          ? 'all required checks passed'
          : `${failedRequired.length} required check(s) failed: forkbox cannot run sandboxes on this host yet`,
      );
      return lines.join('\n');
    });
    if (failedRequired.length > 0) ctx.setExitCode(ERROR_CODES.requirement_missing.exit);
  });
}
