/**
 * The CLI's own log (the daemon launcher's notes): plain lines on stderr, at FORKBOX_LOG_LEVEL (default
 * warn, so a command's stderr carries only its own output and notes). Not pino: the CLI starts on every
 * command, and a logger that loads a dozen modules for lines it rarely prints is not worth it; the
 * daemon (`serve`) and `forkbox mcp` log with pino.
 */
import type { Logger } from '../../domain/logger.ts';

const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: 100 } as const;
type Level = 'debug' | 'info' | 'warn' | 'error';

export function createStderrLog(
  level: string = process.env.FORKBOX_LOG_LEVEL ?? 'warn',
  write: (line: string) => void = (line) => process.stderr.write(line),
): Logger {
  const threshold = LEVELS[level as keyof typeof LEVELS] ?? LEVELS.warn;
  const at =
    (l: Level) =>
    (obj: object | string, msg?: string): void => {
      if (LEVELS[l] < threshold) return;
      const text = typeof obj === 'string' ? obj : `${msg ?? ''} ${JSON.stringify(obj)}`;
      write(`forkbox: ${l}: ${text.trim()}\n`);
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
