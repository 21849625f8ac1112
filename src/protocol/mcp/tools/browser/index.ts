/** The `browser` toolset's tools (docs/BROWSER.md), in the order tools/list returns them. */
import type { ToolDef } from '../../kit/tool-kit.ts';
import { browserClick } from './browser-click.ts';
import { browserClose } from './browser-close.ts';
import { browserEvents } from './browser-events.ts';
import { browserFill } from './browser-fill.ts';
import { browserNavigate } from './browser-navigate.ts';
import { browserOpen } from './browser-open.ts';
import { browserPress } from './browser-press.ts';
import { browserScreenshot } from './browser-screenshot.ts';
import { browserScroll } from './browser-scroll.ts';
import { browserSelect } from './browser-select.ts';
import { browserSnapshot } from './browser-snapshot.ts';
import { browserWaitFor } from './browser-wait-for.ts';

export const BROWSER_TOOLS: readonly ToolDef[] = [
  browserOpen,
  browserSnapshot,
  browserClick,
  browserFill,
  browserSelect,
  browserPress,
  browserScroll,
  browserWaitFor,
  browserScreenshot,
  browserNavigate,
  browserEvents,
  browserClose,
];
