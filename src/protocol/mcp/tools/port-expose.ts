import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';
import { boundedNumber } from '../../bounds.ts';
import { portOut, portShape } from '../kit/shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../kit/tool-kit.ts';

export const portExpose = defineTool({
  name: 'port_expose',
  title: 'Publish port',
  description: "Serve the sandbox's loopback port on the host's loopback.",
  annotations: HINTS.write,
  input: z.object({
    sandbox: sandboxArg,
    port: boundedNumber(LIMITS.port).describe('Its port'),
    host_port: boundedNumber(LIMITS.hostPort).optional().describe('Default: a free one'),
  }),
  output: portShape,
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    const p = await api.exposePort(id, a.port, a.host_port === undefined ? {} : { hostPort: a.host_port });
    return { structured: portOut(p) };
  },
});
