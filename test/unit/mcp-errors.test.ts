/**
 * MCP errors name tools, not CLI commands a model cannot run (issue #12: "an error tells the model to run
 * `forkbox ls`, which it cannot"). The catalog's advice is written for the CLI; src/protocol/mcp/kit/errors.ts
 * rewrites it. Each message below is one the engine really produces.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ForkboxError } from '../../src/domain/errors.ts';
import { mcpMessage, toolError } from '../../src/protocol/mcp/kit/errors.ts';
import { ADVICE } from '../../src/runtimes/native/host/admission.ts';

/** A CLI command the model would take as its own to run: 'forkbox <word>' not said to be the operator's. */
const cliCommands = (m: string): string[] =>
  [...m.matchAll(/(?<!operator[^.;]*)'forkbox [a-z]+[^']*'/g)].map((x) => x[0]);

describe('MCP error messages', () => {
  it('the admission refusal names sandbox_list and sandbox_kill', () => {
    const m = mcpMessage(`not enough memory: ${ADVICE}`);
    assert.deepEqual(cliCommands(m), [], m);
    assert.match(m, /sandbox_list, then sandbox_kill/);
  });

  it("'forkbox doctor' and 'forkbox gc' are the operator's", () => {
    for (const raw of [
      "template t's agent did not connect within 10 ms (it is still running). Check 'forkbox doctor' and /x.log.",
      "free space, or kill sandboxes you no longer need and run 'forkbox gc'",
    ]) {
      const m = mcpMessage(raw);
      assert.deepEqual(cliCommands(m), [], m);
      assert.match(m, /operator/);
    }
  });

  it('a not-found sandbox points at sandbox_list, and the code travels with the message', () => {
    const r = toolError(
      new ForkboxError('not_found', "sandbox 'x' not found. List sandboxes with 'forkbox ls'."),
    );
    assert.equal(r.isError, true);
    const text = (r.content[0] as { text: string }).text;
    assert.match(text, /sandbox_list/);
    assert.match(text, /\[code: not_found\]$/);
    assert.deepEqual(cliCommands(text), []);
  });
});
