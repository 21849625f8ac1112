/**
 * The browser tests' site, served inside the sandbox by Python's http.server on its loopback: a form (a
 * text box, a select), a button whose text changes, a link to a second page, a console message and a
 * request that fails (404).
 */
import type { ForkboxApi } from '../../src/service/api.ts';
import { waitFor } from './wait-for.ts';

export const SITE_PORT = 8000;
/** Chromium resolves `localhost` itself; the sandbox has no /etc/hosts, so Python's check uses the address. */
export const SITE = `http://localhost:${SITE_PORT}`;
const SITE_IP = `http://127.0.0.1:${SITE_PORT}`;

const INDEX = `<!doctype html>
<html><head><title>Test form</title></head>
<body>
<h1>Sign up</h1>
<label>Name <input id="name" type="text"></label>
<label>Plan <select id="plan"><option value="free">Free</option><option value="pro">Pro</option></select></label>
<button id="go" onclick="document.getElementById('out').textContent = 'Hello, ' + document.getElementById('name').value + ' (' + document.getElementById('plan').value + ')'; this.textContent = 'Sent'">Send</button>
<p id="out">Nothing sent</p>
<a href="/second.html">Second page</a>
<script>
console.log('hello from the page');
fetch('/missing.json').catch(() => {});
</script>
</body></html>
`;

const SECOND = `<!doctype html>
<html><head><title>Second</title></head><body><h1>The second page</h1><a href="/">Back home</a></body></html>
`;

/** Write the site into /srv and serve it on the sandbox's loopback; resolves once it answers. */
export async function serveSite(api: ForkboxApi, sandbox: string): Promise<void> {
  await api.writeFile(sandbox, '/srv/index.html', Buffer.from(INDEX));
  await api.writeFile(sandbox, '/srv/second.html', Buffer.from(SECOND));
  await api.startExec(sandbox, {
    argv: ['python3', '-m', 'http.server', String(SITE_PORT), '--bind', '127.0.0.1', '--directory', '/srv'],
  });
  await waitFor(
    async () => {
      const r = await api.exec(sandbox, {
        argv: ['python3', '-c', `import urllib.request; urllib.request.urlopen('${SITE_IP}/').read()`],
      });
      return r.exitCode === 0;
    },
    { what: 'the test site answers inside the sandbox', timeoutMs: 20_000, intervalMs: 200 },
  );
}

/** The ref of the first line of a snapshot matching `re` (e.g. /textbox "Name"/). */
export function refOf(snapshot: string, re: RegExp): string {
  for (const line of snapshot.split('\n')) {
    if (!re.test(line)) continue;
    const m = /\[ref=((?:f\d+)?e\d+)\]/.exec(line);
    if (m?.[1]) return m[1];
  }
  throw new Error(`no element matching ${re} in the snapshot:\n${snapshot}`);
}
