/**
 * Attack: flood the daemon's end of a sandbox's control socket. Code in a sandbox opens ~20,000
 * connections to `/.forkbox/inbox/ctl.sock` and holds them, from the REPL and from a command at once.
 * Precedent: issue #11 item 2 — the daemon ran out of file descriptors and every other sandbox's requests
 * failed (the classic accept-flood / fd-exhaustion of a shared daemon, as in Docker's API socket DoS).
 *
 * Contained when: every such connection is closed at accept (SO_PEERCRED: it is not the agent) before
 * anything is read, so the daemon's descriptor count stays under a fixed bound; another sandbox's exec
 * still answers; the refusals are counted on /metrics.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { abuseDaemon, fdCount, waitFor } from '../helpers/abuse.ts';

const CONNECTIONS = 20_000;
/** Descriptors the daemon may gain during the flood over its count before it (none are kept). */
const FD_BOUND = 200;

const flood = (n: number) =>
  [
    'import socket, resource',
    'soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)',
    'resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))',
    'import errno',
    'held, failed = [], 0',
    `for i in range(${n}):`,
    '    try:',
    '        s = socket.socket(socket.AF_UNIX)',
    '    except OSError as e:',
    "        if e.errno == errno.EMFILE: break  # the sandbox's own fd limit: enough held",
    '        raise',
    '    try:',
    '        s.connect("/.forkbox/inbox/ctl.sock")',
    '        held.append(s)',
    '    except OSError:',
    '        failed += 1',
    '        s.close()',
    '        if failed > 1000: break',
  ].join('\n');

describe('abuse: control-socket flood', () => {
  const d = abuseDaemon();

  it('refuses every connection that is not the agent, keeps its descriptors bounded, serves others', async () => {
    const attacker = await d.api.createSandbox({ pids: 4096 });
    const victim = await d.api.createSandbox({});
    assert.equal((await d.api.exec(victim.id, { argv: ['echo', 'ready'] })).stdout, 'ready\n');
    const baseline = fdCount(d.pid);
    let peak = baseline;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, fdCount(d.pid));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();

    // From a command, holding its connections (it runs in the background while the rest goes on) …
    const bg = await d.api.startExec(attacker.id, {
      argv: [
        'python3',
        '-c',
        `${flood(CONNECTIONS)}\nprint("held", len(held), "failed", failed, flush=True)\nimport time; time.sleep(600)`,
      ],
    });
    // … and from the REPL, keeping them in a variable.
    const repl = await d.api.runCode(attacker.id, {
      code: `${flood(CONNECTIONS)}\nprint("held", len(held), "failed", failed)`,
      timeoutSeconds: 600,
    });
    assert.match(repl.stdout, /held \d+/, JSON.stringify(repl));
    const [, held = '0', failed = '0'] = /held (\d+) failed (\d+)/.exec(repl.stdout) ?? [];
    const tried = Number(held) + Number(failed);
    assert.ok(tried >= 1000, `the REPL made ${tried} connection attempts`);

    // While both floods hold their sockets: another sandbox's exec answers.
    const during = await d.api.exec(victim.id, { argv: ['echo', 'still here'] });
    assert.equal(during.stdout, 'still here\n');
    // And the attacker's own agent still answers (its connection was never displaced).
    assert.equal((await d.api.exec(attacker.id, { argv: ['echo', 'agent ok'] })).stdout, 'agent ok\n');

    // Wait until the command's flood has finished (it prints once done), still under the bound.
    const out = await waitFor('the command flood finished', 600_000, async () => {
      const p = await d.api.pollExec(attacker.id, bg.id, { waitMs: 1000 });
      const text = p.chunks.map((c) => c.data).join('');
      return /held \d+/.test(text) ? text : undefined;
    });
    sampling = false;
    await sampler;
    peak = Math.max(peak, fdCount(d.pid));
    const nums = /held (\d+) failed (\d+)/.exec(out);
    process.stderr.write(
      `# flood: REPL ${repl.stdout.trim()}; command ${out.trim()}; daemon fds ${baseline} before, peak ${peak}\n`,
    );
    assert.ok(nums, out);
    assert.ok(peak - baseline < FD_BOUND, `daemon fds went from ${baseline} to ${peak} (bound +${FD_BOUND})`);

    const metrics = await (await fetch(`${d.url}/metrics`)).text();
    const refused = Number(
      /forkbox_control_connections_refused_total\{reason="peer"\} (\d+)/.exec(metrics)?.[1] ?? 0,
    );
    assert.ok(refused >= 1000, `refusals counted on /metrics: ${refused}`);
    assert.match(metrics, /forkbox_daemon_open_fds \d+/);
    await d.api.killSandbox(attacker.id);
    assert.equal((await d.api.exec(victim.id, { argv: ['echo', 'after'] })).stdout, 'after\n');
  });
});
