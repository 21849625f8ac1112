/**
 * Network policy `allow` with the tools agents use (real runtime, the default image's pip and git): with
 * `allow:files.test`, `pip install` of a wheel from a PEP 503 simple index on that test host succeeds and
 * the package imports, `git clone` over HTTP of a repository there succeeds, and the same pip install
 * from other.test (a test host not on the list) fails with the proxy's refusal. pip and git find the
 * proxy in the variables every command of an `allow` sandbox gets (http_proxy, HTTP_PROXY, …). The wheel,
 * the index and the repository are made by the test in the test host's served directory: nothing is
 * fetched from anywhere else (test/helpers/test-hosts.ts).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { egressSandboxSuite } from '../helpers/egress-suite.ts';
import { nativeUnavailable } from '../helpers/native.ts';
import { PORT, SERVER_A, SERVER_B } from '../helpers/test-hosts.ts';

const skip = nativeUnavailable();

const PKG = 'fbxdemo';
const WHEEL = `${PKG}-1.0-py3-none-any.whl`;
const GREETING = 'installed through the proxy';

/**
 * A pure-Python wheel: the package, then `*.dist-info/` METADATA, WHEEL and RECORD (each file's sha256
 * and size, RECORD itself unhashed), written with Python's zipfile. Prints the wheel's sha256.
 */
const MAKE_WHEEL = `
import base64, hashlib, sys, zipfile
out, pkg, greeting = sys.argv[1:4]
di = pkg + "-1.0.dist-info"
files = {
    pkg + "/__init__.py": "GREETING = %r\\n" % greeting,
    di + "/METADATA": "Metadata-Version: 2.1\\nName: %s\\nVersion: 1.0\\n" % pkg,
    di + "/WHEEL": "Wheel-Version: 1.0\\nGenerator: forkbox-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
def digest(b):
    return base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
record = "".join("%s,sha256=%s,%d\\n" % (p, digest(c.encode()), len(c.encode())) for p, c in files.items())
files[di + "/RECORD"] = record + di + "/RECORD,,\\n"
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for p, c in files.items():
        z.writestr(p, c)
print(hashlib.sha256(open(out, "rb").read()).hexdigest())
`;

/** The wheel under `packages/` and its PEP 503 page `simple/<name>/index.html` in the served dir. */
function serveIndex(dir: string): void {
  mkdirSync(join(dir, 'packages'), { recursive: true });
  mkdirSync(join(dir, 'simple', PKG), { recursive: true });
  const sha = execFileSync('python3', ['-c', MAKE_WHEEL, join(dir, 'packages', WHEEL), PKG, GREETING])
    .toString()
    .trim();
  assert.match(sha, /^[0-9a-f]{64}$/);
  writeFileSync(
    join(dir, 'simple', 'index.html'),
    `<!DOCTYPE html>\n<html><body><a href="${PKG}/">${PKG}</a></body></html>\n`,
  );
  writeFileSync(
    join(dir, 'simple', PKG, 'index.html'),
    `<!DOCTYPE html>\n<html><body><a href="../../packages/${WHEEL}#sha256=${sha}">${WHEEL}</a></body></html>\n`,
  );
}

/** A bare repository with one commit, laid out for git's "dumb HTTP" protocol (plain files). */
function serveRepo(dir: string): void {
  const work = join(dir, 'work');
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      stdio: 'ignore',
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 't',
        GIT_AUTHOR_EMAIL: 't@t',
        GIT_COMMITTER_NAME: 't',
        GIT_COMMITTER_EMAIL: 't@t',
      },
    });
  git('init', '-q', work);
  writeFileSync(join(work, 'README'), 'cloned through the proxy\n');
  git('-C', work, 'add', 'README');
  git('-C', work, 'commit', '-q', '-m', 'one');
  git('init', '-q', '--bare', join(dir, 'repo.git'));
  git('-C', work, 'push', '-q', join(dir, 'repo.git'), 'HEAD:refs/heads/main');
  git('-C', join(dir, 'repo.git'), 'symbolic-ref', 'HEAD', 'refs/heads/main');
  // The dumb protocol reads info/refs and objects/info/packs, which only update-server-info writes.
  git('-C', join(dir, 'repo.git'), 'update-server-info');
}

/** pip's argv for installing the test package from `host`'s index into `target` (no cache, no retries). */
function pipInstall(host: string, target: string, extra: string[] = []): string[] {
  return [
    'python3',
    '-m',
    'pip',
    'install',
    ...extra,
    '--disable-pip-version-check',
    '--no-cache-dir',
    '--retries',
    '0',
    '--timeout',
    '15',
    '--index-url',
    `http://${host}:${PORT}/simple/`,
    // Plain HTTP: pip ignores an index it does not trust.
    '--trusted-host',
    host,
    // Not into the system's site-packages (Debian marks it externally managed, PEP 668).
    '--target',
    target,
    PKG,
  ];
}

describe('network allow: pip install and git clone through the proxy', { skip: skip ?? false }, () => {
  const egress = egressSandboxSuite({
    hostsMap: `files.test=${SERVER_A};other.test=${SERVER_B}`,
    hello: 'hello\n',
    sandbox: { name: 'tools', network: 'allow:files.test' },
  });
  let api: ForkboxApi;
  let sb: string;
  before(() => {
    ({ api, sb } = egress);
    serveIndex(egress.hosts.dir);
    serveRepo(egress.hosts.dir);
  });

  it('pip installs a wheel from a simple index on an allowed host, and it imports', async () => {
    const r = await api.exec(sb, { argv: pipInstall('files.test', '/tmp/pkgs'), timeoutSeconds: 120 });
    assert.equal(r.exitCode, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, new RegExp(`Successfully installed ${PKG}-1\\.0`));
    const imp = await api.exec(sb, {
      argv: ['python3', '-c', `import ${PKG}; print(${PKG}.GREETING)`],
      env: { PYTHONPATH: '/tmp/pkgs' },
    });
    assert.equal(imp.stdout, `${GREETING}\n`, imp.stderr);
    // The REPL imports it too, once the target is on its path.
    const repl = await api.runCode(sb, {
      code: `import sys\nsys.path.insert(0, "/tmp/pkgs")\nimport ${PKG}\n${PKG}.GREETING`,
    });
    assert.equal(repl.ok, true, JSON.stringify(repl));
    assert.match(repl.value ?? '', new RegExp(GREETING));
    // pip fetched the page and the wheel through the proxy.
    const got = egress.audit.lines.filter(
      (l) => l.door === 'egress' && l.sandbox === sb && l.host === 'files.test' && l.outcome === 'accepted',
    );
    assert.ok(got.length >= 2, JSON.stringify(got));
  });

  it('git clones a repository over HTTP from an allowed host', async () => {
    const r = await api.exec(sb, {
      cmd: `git clone -q http://files.test:${PORT}/repo.git /tmp/repo && cat /tmp/repo/README`,
      timeoutSeconds: 60,
    });
    assert.equal(r.stdout, 'cloned through the proxy\n', r.stderr);
  });

  it('pip install from a host off the list fails with the proxy refusal', async () => {
    // -vv: pip says why it skipped the index page (at the default level it only finds no version).
    const r = await api.exec(sb, {
      argv: pipInstall('other.test', '/tmp/other', ['-vv']),
      timeoutSeconds: 120,
    });
    assert.notEqual(r.exitCode, 0, r.stdout);
    assert.match(
      `${r.stdout}\n${r.stderr}`,
      /403 Client Error: Forbidden for url: http:\/\/other\.test:8080\/simple\/fbxdemo\//,
    );
    assert.doesNotMatch(r.stdout, /Successfully installed/);
    const absent = await api.exec(sb, { argv: ['test', '-e', `/tmp/other/${PKG}`] });
    assert.equal(absent.exitCode, 1);
    const refused = egress.audit.lines.filter(
      (l) => l.door === 'egress' && l.sandbox === sb && l.host === 'other.test',
    );
    assert.ok(refused.length > 0, 'the proxy saw the request');
    assert.ok(
      refused.every((l) => l.outcome === 'refused'),
      JSON.stringify(refused),
    );
  });
});
