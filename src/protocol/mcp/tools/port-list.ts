import { z } from 'zod';
import { portOut, portShape } from '../kit/shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../kit/tool-kit.ts';

export const portList = defineTool({
  name: 'port_list',
  title: 'List ports',
  description: "The sandbox's published ports.",
  annotations: HINTS.read,
  input: z.object({ sandbox: sandboxArg }),
  output: z.object({ ports: z.array(portShape) }),
  async run(a, { api, sandbox }) {
    return { structured: { ports: (await api.listPorts(await sandbox(a.sandbox))).map(portOut) } };
  },
});
