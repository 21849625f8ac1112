import { z } from 'zod';
import { LIMITS, SIZES } from '../../../../domain/limits.ts';
import { boundedNumber } from '../../../bounds.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { envArg } from '../../kit/kv-list.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { auditEvent } from './audit.ts';
import { devbenchErrorText } from './errors.ts';
import { devbenchExecId } from './ids.ts';
import { containerIdArg, inputData } from './shapes.ts';

/**
 * forkbox's background exec with its idempotency key (kept in the store per sandbox: the same key
 * again answers the first exec, also after a daemon restart; DevBench kept keys in memory for 24 h).
 * `as_root` is accepted and audited (security_as_root) but runs nothing differently: commands run as
 * the sandbox's user, root inside its user namespace and an unprivileged uid on the host.
 */
export const execStart = compatTool(
  {
    name: 'exec_start',
    title: 'Start exec',
    description:
      'Start a command (argv list, no shell) in a container; returns exec_id at once. Poll it with exec_poll. The same idempotency_key again returns the first exec.',
    annotations: HINTS.run,
    input: inputData({
      container_id: containerIdArg,
      cmd: z
        .array(z.string().max(SIZES.argChars))
        .min(1)
        .max(SIZES.argvEntries)
        .describe('Command and arguments'),
      cwd: z.string().min(1).max(SIZES.pathChars).default('/workspace').describe('Working directory'),
      env: envArg.optional().describe('Environment variables (NAME=value, or an object)'),
      as_root: z.boolean().default(false).describe('Execute as root user (ignored: see docs)'),
      timeout_s: boundedNumber(LIMITS.timeoutSeconds).default(600).describe('Execution timeout in seconds'),
      idempotency_key: z
        .string()
        .min(1)
        .max(SIZES.idempotencyKeyChars)
        .optional()
        .describe('Prevents duplicate execution'),
    }),
    async run({ input_data: a }, { api, log }) {
      const s = await api.getSandbox(a.container_id);
      const r = await api.startExec(s.id, {
        argv: a.cmd,
        cwd: a.cwd,
        timeoutSeconds: a.timeout_s,
        ...(a.env === undefined ? {} : { env: a.env }),
        ...(a.idempotency_key === undefined ? {} : { idempotencyKey: a.idempotency_key }),
      });
      const execId = devbenchExecId(s.id, r.id);
      if (a.as_root)
        auditEvent(log, 'security_as_root', { container_id: s.id, details: { exec_id: execId } });
      auditEvent(log, 'exec_start', {
        container_id: s.id,
        details: { exec_id: execId, cmd_args: a.cmd.length, as_root: a.as_root },
      });
      return { exec_id: execId, status: 'running' };
    },
  },
  devbenchErrorText,
);
