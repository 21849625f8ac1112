import { refSchema } from '../../../bounds.ts';

/**
 * Every Podflare tool acts on the session's sandbox; `sandbox_id` (optional everywhere) points a call at
 * another sandbox of the session instead — a child `fork` returned — so that forks can be driven apart,
 * compared with `diff` and kept with `merge_into`.
 */
export const sandboxIdArg = refSchema()
  .optional()
  .describe("Default: this session's sandbox (or a child id from fork)");
