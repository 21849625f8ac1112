#!/usr/bin/env bash
# Installs runsc (gVisor) for forkbox's gvisor runtime from Debian's backports suite of the archive apt
# already uses, the way Debian documents backports: the suite is added beside the main one (same URI,
# same keyring), every package in it keeps backports' low priority (so nothing else is ever upgraded from
# it), and runsc alone is installed from it by its pinned version. Safe to run again.
set -euo pipefail

RUNSC_VERSION="${FORKBOX_RUNSC_VERSION:-0.0~20240729.0-4~bpo12+2}"

installed="$(dpkg-query -W -f='${Status} ${Version}' runsc 2>/dev/null || true)"
if [ "$installed" = "install ok installed $RUNSC_VERSION" ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "forkbox setup: run as root to install runsc $RUNSC_VERSION (the gvisor runtime)" >&2
  exit 1
fi

# shellcheck disable=SC1091
. /etc/os-release
codename="${VERSION_CODENAME:-}"
if [ "${ID:-}" != "debian" ] || [ -z "$codename" ]; then
  echo "forkbox setup: the gvisor runtime's runsc comes from Debian's backports; on ${ID:-this system} install runsc yourself (gVisor release 2024-07-29 or later)" >&2
  exit 1
fi
suite="$codename-backports"

# The URI and keyring of the main suite, as apt knows them (never a host name of our own).
uri="$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Created-By: Packages' | awk -v s="$codename" '$2 == s { print $1; exit }')"
if [ -z "$uri" ]; then
  echo "forkbox setup: apt has no source for Debian $codename's main suite; add one, then re-run" >&2
  exit 1
fi
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

list=/etc/apt/sources.list.d/forkbox-backports.sources
if ! apt-get indextargets --format '$(RELEASE)' 'Created-By: Packages' | grep -qx "$suite"; then
  cat > "$list" <<SRC
# Added by forkbox's set-up for runsc (gVisor) only; see /etc/apt/preferences.d/forkbox-backports.
Types: deb
URIs: $uri
Suites: $suite
Components: main
Signed-By: $keyring
SRC
fi
cat > /etc/apt/preferences.d/forkbox-backports <<PIN
# Nothing is installed or upgraded from $suite unless asked for by name and version (forkbox: runsc).
Package: *
Pin: release n=$suite
Pin-Priority: 100
PIN

apt-get update -qq >/dev/null 2>&1 || apt-get update -qq || true
echo "==> installing runsc $RUNSC_VERSION from $suite (the gvisor runtime)" >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "runsc=$RUNSC_VERSION" >&2
