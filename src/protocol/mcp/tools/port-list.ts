import { sandboxListTool } from '../kit/list-tool.ts';
import { portOut, portShape } from '../kit/shapes.ts';

export const portList = sandboxListTool({
  name: 'port_list',
  title: 'List ports',
  description: "The sandbox's published ports.",
  key: 'ports',
  item: portShape,
  list: (api, sandbox) => api.listPorts(sandbox),
  out: portOut,
});
