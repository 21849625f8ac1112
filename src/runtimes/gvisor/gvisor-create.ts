/**
 * Creating a gvisor sandbox: its host side made (gvisor-make.ts), `runsc run` of its bundle, and its agent
 * greeting the host over its control socket. Whatever fails on the way, what was made is released.
 */
import type { CreateSandboxSpec, ImageStore, SandboxHandle } from '../../service/ports.ts';
import { unsupported } from './gvisor-capabilities.ts';
import type { GvisorLink, GvisorSandbox } from './gvisor-link.ts';
import type { GvisorMaker } from './gvisor-make.ts';
import type { GvisorPaths } from './gvisor-paths.ts';
import type { Runsc } from './runsc.ts';

/** How long a new sandbox's agent may take to greet the host (a sentry starting, then python3). */
const CREATE_HELLO_MS = 30_000;

export interface GvisorCreateDeps {
  runsc: Runsc;
  paths: GvisorPaths;
  images: Pick<ImageStore, 'require'>;
  maker: GvisorMaker;
  link: GvisorLink;
  live: Map<string, GvisorSandbox>;
  handleOf(sb: GvisorSandbox, python: string): SandboxHandle;
}

export function createGvisorCreate(deps: GvisorCreateDeps) {
  const { maker, link, live } = deps;
  return async function createSandbox(spec: CreateSandboxSpec): Promise<SandboxHandle> {
    if (spec.network && spec.network.mode !== 'none') throw unsupported(`network '${spec.network.mode}'`);
    if (spec.project) throw unsupported('projects');
    const image = deps.images.require(spec.image);
    if (!image.python)
      throw unsupported(
        `image '${spec.image}', which has no python3 (the agent runs on the image's python3)`,
      );
    const python = image.python;
    const sb = await maker.prepare({
      id: spec.id,
      layers: spec.lowers ?? image.layers,
      python,
      env: { ...image.env, ...spec.env },
      ...(image.config ? { execDefaults: { cwd: image.config.workingDir, user: image.config.user } } : {}),
      limits: spec.limits,
    });
    live.set(sb.id, sb);
    try {
      await deps.runsc.run(sb.id, deps.paths.bundle(sb.id), deps.paths.log(sb.id));
      sb.hostPid = (await deps.runsc.state(sb.id))?.pid ?? 0;
      const conn = await link.waitConnected(sb, CREATE_HELLO_MS, `new sandbox ${sb.id}'s agent`);
      await conn.request('ping', {}, { timeoutMs: 10_000 });
      return deps.handleOf(sb, python);
    } catch (e) {
      live.delete(sb.id);
      await maker.release(sb);
      throw e;
    }
  };
}
