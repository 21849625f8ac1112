/**
 * The `podflare` toolset: Podflare's MCP server, its 7 tools over ONE sandbox per MCP session, created
 * lazily on the first call (forkbox's default sandbox: one per stdio connection, HTTP session or token),
 * answering Podflare's raw JSON values (compat-tool.ts) with its errors (errors.ts). Podflare published
 * the tools' behaviour, not their input schemas: the argument names are forkbox's choice, written in
 * docs/TOOLSETS.md and test/golden/toolsets/podflare.json. It had no prompts or resources.
 */
import type { Toolset } from '../../toolset.ts';
import { diff } from './diff.ts';
import { download } from './download.ts';
import { fork } from './fork.ts';
import { mergeInto } from './merge-into.ts';
import { runBash } from './run-bash.ts';
import { runPython } from './run-python.ts';
import { upload } from './upload.ts';

export const podflareToolset: Toolset = {
  name: 'podflare',
  summary: "Podflare's tools (run_python, fork, diff, merge_into, …) on one sandbox per session",
  session: 'default-sandbox',
  tools: [runPython, runBash, fork, diff, mergeInto, upload, download],
};
