import { ForkboxError } from '../../../../domain/errors.ts';
import type { ForkboxApi, SandboxInfo } from '../../../../service/api.ts';

/** A live sandbox, as forkd knew them: one that has ended is not found (forkd forgot it on kill). */
export async function liveSandbox(api: ForkboxApi, id: string): Promise<SandboxInfo> {
  const s = await api.getSandbox(id);
  if (s.state !== 'running' && s.state !== 'paused' && s.state !== 'creating') {
    throw new ForkboxError(
      'not_found',
      `sandbox '${id}' has ended (${s.state}${s.endReason ? `: ${s.endReason}` : ''}). List sandboxes with list_sandboxes.`,
      { sandbox: id },
    );
  }
  return s;
}
