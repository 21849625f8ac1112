import { sandboxListTool } from '../kit/list-tool.ts';
import { execOut, execShape } from '../kit/shapes.ts';

export const execList = sandboxListTool({
  name: 'exec_list',
  title: 'List commands',
  description: "A sandbox's last 100 commands, newest first, with state and exit code.",
  key: 'execs',
  item: execShape,
  list: (api, sandbox) => api.listExecs(sandbox),
  out: execOut,
});
