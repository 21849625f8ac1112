#!/usr/bin/env node
// The forkbox executable. Runs the built CLI (dist/) when present, else the TypeScript sources through
// tsx, so `npx forkbox …` works both after `npm run build` and straight from a checkout.
import { existsSync } from 'node:fs';

const dist = new URL('../dist/cli/main.js', import.meta.url);
let mod;
if (existsSync(dist)) {
  mod = await import(dist.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  mod = await import(new URL('../src/cli/main.ts', import.meta.url).href);
}
process.exitCode = await mod.main(process.argv);
