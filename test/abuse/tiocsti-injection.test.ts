/**
 * Attack: terminal injection — push characters into the input queue of a controlling terminal with the
 * TIOCSTI ioctl (or open /dev/tty), so that whatever reads that terminal after the command (a shell of
 * the host's user) runs them.
 * Precedent: bubblewrap CVE-2017-5226 (bubblewrap #142; peers 6b #16), fixed there with `setsid`.
 * Contained when: commands (sync and background, with stdin) and REPL code have no controlling terminal
 * (tty_nr 0, /dev/tty → ENXIO) and TIOCSTI fails on every standard fd.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { lastJson, replPython, waitFor } from '../helpers/attacks.ts';
import { nativeUnavailable, withOneSandbox } from '../helpers/native.ts';

const skip = nativeUnavailable();

const SCRIPT = `
import errno, fcntl, json, os, termios
res = {"tty_nr": int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[4])}
for fd in (0, 1, 2):
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b"x")
        res["TIOCSTI fd %d" % fd] = "INJECTED"
    except OSError as e:
        res["TIOCSTI fd %d" % fd] = errno.errorcode.get(e.errno, str(e.errno))
try:
    os.close(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
    res["/dev/tty"] = "OPENED"
except OSError as e:
    res["/dev/tty"] = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps(res))
`;

interface Probe {
  tty_nr: number;
  [k: string]: string | number;
}

describe('abuse: TIOCSTI terminal injection', { skip: skip ?? false }, () => {
  let api: ForkboxApi;
  let id: string;
  withOneSandbox((s) => {
    ({ api, id } = s);
  });

  const noTerminal = (p: Probe, where: string) => {
    assert.equal(p.tty_nr, 0, `${where}: no controlling terminal`);
    assert.equal(p['/dev/tty'], 'ENXIO', `${where}: /dev/tty has no terminal behind it`);
    for (const fd of [0, 1, 2]) assert.notEqual(p[`TIOCSTI fd ${fd}`], 'INJECTED', `${where}: fd ${fd}`);
    for (const fd of [0, 1, 2]) assert.match(String(p[`TIOCSTI fd ${fd}`]), /^(ENOTTY|EIO|EPERM)$/, where);
  };

  it('a sync exec has no controlling terminal and cannot inject', async () => {
    const r = await api.exec(id, { argv: ['python3', '-c', SCRIPT], stdin: Buffer.from('input\n') });
    noTerminal(lastJson<Probe>(r.stdout, 'exec'), 'exec');
  });

  it('a background exec with stdin has none either', async () => {
    const ex = await api.startExec(id, { argv: ['python3', '-c', SCRIPT], stdin: true });
    await api.writeExecStdin(id, ex.id, Buffer.from('x'), true);
    let out = '';
    let afterSeq = -1;
    await waitFor('the background exec to finish', async () => {
      const p = await api.pollExec(id, ex.id, { afterSeq, waitMs: 1000 });
      for (const c of p.chunks) if (c.stream === 'stdout') out += c.data;
      afterSeq = p.nextSeq;
      return p.done;
    });
    noTerminal(lastJson<Probe>(out, 'background exec'), 'background exec');
  });

  it('REPL code and its subprocesses have none either', async () => {
    noTerminal(await replPython<Probe>(api, id, SCRIPT), 'REPL');
    const sub = await replPython<Probe>(
      api,
      id,
      `import subprocess, sys\nprint(subprocess.run([sys.executable, "-c", ${JSON.stringify(SCRIPT)}], capture_output=True, text=True).stdout)`,
    );
    noTerminal(sub, 'REPL subprocess');
  });
});
