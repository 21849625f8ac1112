/**
 * agentkernel's `image`: a Docker image name. forkbox takes a local image name (`debian`, the default
 * image) or a registry reference with a host (`host:port/name:tag`, pulled on first use under the
 * daemon's --image-allow list). A short Docker-style name that is no local image (`python:3.12-alpine`)
 * is tried as `library/<name>` on the daemon's default registry (FORKBOX_DEFAULT_REGISTRY), as Docker
 * resolves it; without one, the local lookup's error stands. Absent: forkbox's default image, which has
 * Python and Node (agentkernel picked an image from the command; forkbox's default runs both).
 */
import { isForkboxError } from '../../../../domain/errors.ts';
import type { CreateSandboxRequest, ForkboxApi, SandboxInfo } from '../../../../service/api.ts';

export async function createWithImage(api: ForkboxApi, req: CreateSandboxRequest): Promise<SandboxInfo> {
  try {
    return await api.createSandbox(req);
  } catch (e) {
    const image = req.image;
    const missingLocal =
      image !== undefined &&
      !image.includes('/') &&
      isForkboxError(e) &&
      e.code === 'not_found' &&
      (e.details?.image === image || e.message.startsWith(`no image '${image}'`));
    if (!missingLocal) throw e;
    try {
      return await api.createSandbox({ ...req, image: `library/${image}` });
    } catch (again) {
      // No default registry (an invalid reference): the local lookup's error is the one to read.
      if (isForkboxError(again) && again.code === 'invalid_argument') throw e;
      throw again;
    }
  }
}
