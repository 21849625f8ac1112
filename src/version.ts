/** forkbox's version, reported by `system_status` and `forkbox --version`. Keep in step with package.json. */
export const VERSION = '0.1.0';
