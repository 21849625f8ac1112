import { HINTS } from '../../kit/tool-kit.ts';
import { pageTool } from './browser-kit.ts';

export const browserSnapshot = pageTool({
  name: 'browser_snapshot',
  title: 'Page snapshot',
  description: "The open page's accessibility tree as text, with refs (e12) valid until the page changes.",
  annotations: HINTS.read,
  args: {},
  action: () => ({ action: 'snapshot' }),
});
