/**
 * The one logger interface of forkbox. pino's loggers satisfy it; parts that need less take a Pick of
 * it. Objects carry the fields, the message says what happened; never log secrets or sandbox contents.
 */
export interface Logger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

/** A logger that drops everything (tests, library use without logging). */
export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
