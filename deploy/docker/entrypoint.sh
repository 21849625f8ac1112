#!/bin/bash
# The forkbox container's main process (under tini, PID 1): checks the state volume, makes a token on the
# first start, runs `forkbox serve` with its HTTP listener on 0.0.0.0:7777, builds the default image
# into the volume when it is absent (a no-op once built), and starts the daemon again if it dies: its
# sandboxes live on in this container and the new daemon re-adopts them. SIGTERM (`docker stop`) stops
# the daemon gracefully, then the container ends — and the sandboxes' processes with it (docs/CONTAINER.md).
#
# Arguments are passed to `forkbox serve` (e.g. --allow-host NAME, --pool 2; a leading `serve` is
# dropped, as deploy/kubernetes passes it); a first argument that is not an option is run as a command
# instead (`docker run --rm forkbox forkbox --version`). Environment:
#   FORKBOX_LISTEN         listen address (default 0.0.0.0:7777)
#   FORKBOX_TOKEN_FILE     token file (default <state dir>/tokens, made on the first start: tenant 'default')
#   FORKBOX_DEFAULT_IMAGE  0: do not build the default image at start
set -uo pipefail

if [ "${1:-}" = serve ]; then
  shift
elif [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  exec "$@"
fi

export FORKBOX_STATE_DIR="${FORKBOX_STATE_DIR:-/var/lib/forkbox}"
export FORKBOX_LISTEN="${FORKBOX_LISTEN:-0.0.0.0:7777}"
state="$FORKBOX_STATE_DIR"
say() { echo "forkbox-entrypoint: $*" >&2; }

mkdir -p "$state"
if [ "$(stat -f -c %T "$state")" = overlayfs ]; then
  say "$state is on the container's overlay root filesystem, where sandboxes' overlay mounts cannot go."
  say "Mount a volume there: docker run ... -v forkbox:$state ... (docs/CONTAINER.md)."
  exit 2
fi

# Loop devices (the btrfs volume; the copy driver's disk images): the kernel makes /dev/loopN on the
# host's devtmpfs when loop-control hands out N, but a container's /dev is a copy made at its start.
# Make the nodes here (a privileged container may; otherwise CAP_MKNOD and `b 7:* rwm` are needed).
if [ -c /dev/loop-control ]; then
  for i in $(seq 0 255); do
    [ -e "/dev/loop$i" ] || mknod -m 0660 "/dev/loop$i" b 7 "$i" 2>/dev/null || break
  done
fi

# cgroup v2 with a private cgroup namespace (Docker's default on v2 hosts): the namespace's root group
# holds this container's processes, and v2 refuses to enable controllers for the children of a group
# that has processes. Move them into a leaf first, as Docker-in-Docker does (docs/CONTAINER.md).
if [ -f /sys/fs/cgroup/cgroup.controllers ] && [ "$(cat /proc/self/cgroup)" = "0::/" ]; then
  mkdir -p /sys/fs/cgroup/init
  xargs -rn1 </sys/fs/cgroup/cgroup.procs >/sys/fs/cgroup/init/cgroup.procs 2>/dev/null || :
  sed -e 's/ / +/g' -e 's/^/+/' </sys/fs/cgroup/cgroup.controllers >/sys/fs/cgroup/cgroup.subtree_control ||
    say "could not enable the cgroup controllers for child groups; run with --cgroupns=host if creates fail."
fi

# Tokens given as flags (a mounted token file, an OIDC issuer): no token is made.
given=0
for a in "$@"; do case "$a" in --token-file* | --oidc-issuer*) given=1 ;; esac; done
if [ "$given" -eq 0 ] && [ -z "${FORKBOX_TOKEN_FILE:-}" ] && [ -z "${FORKBOX_OIDC_ISSUER:-}" ]; then
  export FORKBOX_TOKEN_FILE="$state/tokens"
  if [ ! -s "$FORKBOX_TOKEN_FILE" ]; then
    (umask 077 && printf '%s default\n' "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" >"$FORKBOX_TOKEN_FILE")
    say "made a bearer token for tenant 'default' in $FORKBOX_TOKEN_FILE (kept in the volume)."
  fi
  say "the token: docker exec CONTAINER cut -d' ' -f1 $FORKBOX_TOKEN_FILE"
fi

port="${FORKBOX_LISTEN##*:}"
daemon=0
stopping=0
on_term() {
  stopping=1
  [ "$daemon" -gt 0 ] && kill -TERM "$daemon" 2>/dev/null
}
trap on_term TERM INT

# Waits (up to 2 minutes: recovery of many sandboxes comes first) for the daemon's TCP listener.
wait_listening() {
  for _ in $(seq 1 240); do
    kill -0 "$daemon" 2>/dev/null || return 1
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.5
  done
  return 1
}

build_default_image() {
  [ "${FORKBOX_DEFAULT_IMAGE:-1}" = 0 ] && return 0
  wait_listening || return 0
  say "building the default image 'debian' if it is absent or out of date (the first time: a few minutes)"
  if forkbox images build debian; then
    say "the default image is ready"
  else
    say "building the default image failed (above). Creates need it: run 'docker exec CONTAINER forkbox images build debian'."
  fi
}

# cgroup v1's freezer holds a frozen process even against SIGKILL: paused sandboxes and snapshots'
# holders would keep the container from ever ending when its init exits (`docker stop` then fails with
# "did not receive an exit event"). Thawed whenever this script exits (the daemon is gone by then), they
# end with the container.
thaw_all() {
  local id f
  id="$(cat "$state/state-id" 2>/dev/null)" || return 0
  for f in $(find "/sys/fs/cgroup/freezer/forkbox/$id" -name freezer.state 2>/dev/null); do
    echo THAWED >"$f" 2>/dev/null
  done
  for f in $(find "/sys/fs/cgroup/forkbox/$id" -name cgroup.freeze 2>/dev/null); do
    echo 0 >"$f" 2>/dev/null
  done
}

trap thaw_all EXIT

restarts=0
while :; do
  started=$(date +%s)
  forkbox serve "$@" &
  daemon=$!
  # In the background: a trapped SIGTERM runs only once the foreground command has returned.
  [ "$restarts" -eq 0 ] && build_default_image &
  # `wait` returns early when a signal is trapped; wait again until the daemon has really exited.
  while :; do
    wait "$daemon"
    status=$?
    kill -0 "$daemon" 2>/dev/null || break
  done
  [ "$stopping" -eq 1 ] && exit 0
  # A daemon that exits by itself at once (a bad flag, a state dir it cannot use) would only do it again:
  # give up then (the container's restart policy decides). Killed by a signal, it is started again.
  if [ "$status" -lt 128 ] && [ $(($(date +%s) - started)) -lt 10 ]; then
    say "forkbox serve exited ($status) within 10 s of starting; not starting it again."
    exit "$status"
  fi
  restarts=$((restarts + 1))
  if [ "$restarts" -gt 20 ]; then
    say "forkbox serve exited ($status), its 20th restart; giving up (docker logs has why)."
    exit 1
  fi
  say "forkbox serve exited ($status); starting it again (its sandboxes are re-adopted)"
  sleep 1
done
