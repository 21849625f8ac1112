import { listTool } from '../kit/list-tool.ts';
import { templateOut, templateShape } from './template-define.ts';

export const templateList = listTool({
  name: 'template_list',
  title: 'List templates',
  description: "Templates for sandbox_create's template: an image plus Python modules already imported.",
  key: 'templates',
  item: templateShape,
  list: (api) => api.listTemplates(),
  out: templateOut,
});
