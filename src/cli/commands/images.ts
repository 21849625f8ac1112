/** `forkbox images build|import|pull|ls|rm`. */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { ForkboxError } from '../../domain/errors.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { formatBytes, formatRelative, table } from '../output/output.ts';
import { createProgressDisplay } from '../output/progress.ts';

export function register(program: Command, ctx: CliContext): void {
  const images = defineCommand(program, 'images');

  images
    .command('build')
    .description('build an image (today: a Debian root filesystem with python3)')
    .argument('<distro>', "the distribution: 'debian'")
    .option('--suite <suite>', 'Debian suite, e.g. bookworm')
    .option('--packages <list>', 'extra packages, comma-separated', (v: string) =>
      v
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== ''),
    )
    .option('--name <name>', 'image name (default: derived from the distro and suite)')
    .option('--browser', "the browser variant: Chromium and fonts on top (default name 'debian-browser')")
    .action(
      async (
        distro: string,
        o: { suite?: string; packages?: string[]; name?: string; browser?: boolean },
      ) => {
        if (distro !== 'debian') {
          throw new ForkboxError(
            'invalid_argument',
            `cannot build '${distro}' images yet. Use 'forkbox images build debian'.`,
          );
        }
        const api = await ctx.api();
        const progress = createProgressDisplay();
        const req: Parameters<typeof api.buildImage>[0] = { distro: 'debian' };
        if (o.suite !== undefined) req.suite = o.suite;
        if (o.packages !== undefined) req.packages = o.packages;
        if (o.name !== undefined) req.name = o.name;
        if (o.browser === true) req.browser = true;
        try {
          const img = await api.buildImage(req, (e) => progress.update(e));
          progress.stop();
          ctx.out().result(img, () => `${img.name} (${formatBytes(img.sizeBytes)})`);
        } finally {
          progress.stop();
        }
      },
    );

  images
    .command('import')
    .description('import a root filesystem (directory or tar archive) as an image')
    .argument('<name>', 'image name')
    .argument('<src>', 'directory or .tar/.tar.gz file on this host')
    .action(async (name: string, src: string) => {
      const api = await ctx.api();
      const progress = createProgressDisplay();
      try {
        // The daemon has its own working directory: send an absolute path.
        const img = await api.importImage(name, resolve(src), (e) => progress.update(e));
        progress.stop();
        ctx.out().result(img, () => `${img.name} (${formatBytes(img.sizeBytes)})`);
      } finally {
        progress.stop();
      }
    });

  images
    .command('pull')
    .description('pull an image from a registry (host:port/name:tag or host:port/name@sha256:...)')
    .argument('<ref>', 'registry reference')
    .action(async (ref: string) => {
      const api = await ctx.api();
      const progress = createProgressDisplay();
      try {
        const img = await api.pullImage(ref, (e) => progress.update(e));
        progress.stop();
        ctx.out().result(img, () => `${img.name} (${formatBytes(img.sizeBytes)}, ${img.digest ?? img.id})`);
      } finally {
        progress.stop();
      }
    });

  images
    .command('ls')
    .description('list images')
    .action(async () => {
      const list = await (await ctx.api()).listImages();
      ctx.out().result(list, () =>
        list.length === 0
          ? "no images. Build one with 'forkbox images build debian'."
          : table(
              ['NAME', 'SIZE', 'SOURCE', 'CREATED'],
              list.map((i) => [i.name, formatBytes(i.sizeBytes), i.source, formatRelative(i.createdAt)]),
            ),
      );
    });

  images
    .command('rm')
    .description('remove an image')
    .argument('<name>', 'image name')
    .action(async (name: string) => {
      await (await ctx.api()).removeImage(name);
      ctx.out().result({ removed: name }, () => name);
    });
}
