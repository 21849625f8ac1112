/** Running runc for templates: stdio to the template's log file, never the daemon's own. */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';

/** The last `bytes` of a log file ('' when there is none). */
export function logTail(file: string, bytes = 2000): string {
  try {
    return readFileSync(file, 'utf8').slice(-bytes).trim();
  } catch {
    return '';
  }
}

export function runProcess(
  cmd: string,
  args: string[],
  logFile: string,
): Promise<{ code: number; log: string }> {
  return new Promise((resolve, reject) => {
    const fd = openSync(logFile, 'a', 0o600);
    // stdin /dev/null and output to a log file, never the daemon's stdio: in stdio MCP mode that is
    // the protocol stream, and after a daemon restart it would be a dead pipe. detached: the
    // container must outlive the daemon.
    const p = spawn(cmd, args, { stdio: ['ignore', fd, fd], detached: true });
    closeSync(fd);
    p.on('error', reject);
    p.on('exit', (code) => resolve({ code: code ?? 1, log: logTail(logFile) }));
  });
}
