# forkbox as a container image: the daemon with its HTTP listener (MCP, REST, metrics) on port 7777.
#
#   docker build -t forkbox .
#   docker run -d --name forkbox --privileged -p 127.0.0.1:7777:7777 -v forkbox:/var/lib/forkbox forkbox
#
# What it needs and why (privileged, the state volume, cgroups), the token, and what survives a restart:
# docs/CONTAINER.md. Without a registry, scripts/build-container.sh builds this same file on a Debian
# root filesystem made with debootstrap and imported into Docker (it passes BASE and NODE_IMAGE).

# The daemon's system: Debian bookworm, whose packages (runc, debootstrap, btrfs-progs, ...) forkbox is
# tested with. Node.js comes from NODE_IMAGE: Debian's own nodejs is 18, forkbox needs >= 20.19.
ARG BASE=debian:bookworm-slim
ARG NODE_IMAGE=node:20.20.2-bookworm-slim

# ── build: npm dependencies (better-sqlite3 is compiled here), the TypeScript build, then only what runs.
FROM ${NODE_IMAGE} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# Native modules build against the headers of the Node that runs them (no header download). Node trusts
# the system's CAs as well as its own (a TLS-inspecting proxy's CA, added to the base's
# /usr/local/share/ca-certificates, as scripts/build-container.sh does from the host).
ENV npm_config_nodedir=/usr/local NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
WORKDIR /opt/forkbox
COPY package.json package-lock.json ./
# npm can end early yet exit 0 ("Exit handler never called"): the native module must load.
RUN npm ci --no-audit --no-fund && node -e "new (require('better-sqlite3'))(':memory:').close()"
COPY tsconfig.json tsconfig.build.json ./
COPY bin bin
COPY src src
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && find src -mindepth 1 -maxdepth 1 ! -name agent -exec rm -rf {} +

# ── the image: Debian + what the daemon runs (docs/CONTAINER.md lists why each is there) + forkbox.
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      runc debootstrap btrfs-progs e2fsprogs util-linux mount python3 ca-certificates \
      slirp4netns uidmap nftables iproute2 kmod procps tini \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/node /usr/local/bin/node
COPY --from=build /opt/forkbox /opt/forkbox
COPY deploy/docker/entrypoint.sh /usr/local/bin/forkbox-entrypoint
RUN ln -s /opt/forkbox/bin/forkbox.js /usr/local/bin/forkbox && forkbox --version
ENV FORKBOX_STATE_DIR=/var/lib/forkbox NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
# Sandboxes' overlay and btrfs mounts cannot sit on the container's own overlay root: the state dir is a
# volume (an anonymous one when `docker run` names none; name it to keep it: -v forkbox:/var/lib/forkbox).
VOLUME /var/lib/forkbox
EXPOSE 7777
# tini is PID 1: it reaps the sandboxes' processes that end up orphaned in the container and passes
# SIGTERM on to the entrypoint, which stops the daemon gracefully.
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/forkbox-entrypoint"]
