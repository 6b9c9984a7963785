# Sourced by tests/cluster/*/build.sh: one build at a time per output folder, published whole.
#
# make dev beside make test-cluster, the two pytest-xdist workers of the tier, or two clones on one
# machine may run the same build.sh at once, and they share the cache. So a build script, once its
# stamp check missed:
#   build_lock NAME OUT   waits for the lock of OUT's builds (flock on OUT.lock, held until the script
#                         exits), saying so when another caller holds it; the script then checks its
#                         stamp again and, finding the other caller's build, builds nothing;
#   build_dir OUT         sets build_tmp to a private folder beside OUT (mktemp -d OUT.tmp.XXXXXX),
#                         removed when the script exits unless published (a failed build leaves none);
#   publish OUT           replaces OUT with build_tmp by rename;
#   go_step NAME WHAT CMD runs one build command (CMD...: a `go build`) with its own output (on a cold
#                         cache, hundreds of `go: downloading` lines) kept in a log, and says instead
#                         one line when it starts and one when it ends, with its elapsed time and the
#                         number of modules it downloaded; on failure, the log without the downloads.
# OUT is only ever made by that rename, so a folder whose stamp matches is a whole build.
# This file does not shape what is built, so it is not part of the stamps.

build_lock() {
  local name="$1" out="$2"
  command -v flock >/dev/null || { echo "$name: no 'flock' on PATH (util-linux)" >&2; exit 3; }
  mkdir -p "$(dirname "$out")"
  exec 9>"$out.lock"
  if ! flock --nonblock 9; then
    echo "$name: another build of $out is running; waiting for it (lock $out.lock)" >&2
    flock 9
  fi
}

build_dir() {
  local out="$1"
  # Only the holder of the lock builds, so a private folder found now was left by a build killed
  # before its trap ran.
  rm -rf "$out".tmp.*
  build_tmp="$(mktemp -d "$out.tmp.XXXXXX")"
  chmod 755 "$build_tmp"
  trap 'rm -rf "$build_tmp"' EXIT
}

publish() {
  local out="$1"
  rm -rf "$out"
  mv -T "$build_tmp" "$out"
}

go_step() {
  local name="$1" what="$2" log started downloads
  shift 2
  log="$(mktemp)"
  started=$(date +%s)
  echo "$name: building $what ..." >&2
  if "$@" >"$log" 2>&1; then
    downloads=$(grep -c '^go: downloading ' "$log" || true)
    echo "$name: $what built in $(( $(date +%s) - started )) s ($downloads modules downloaded)" >&2
    rm -f "$log"
  else
    echo "$name: building $what failed after $(( $(date +%s) - started )) s:" >&2
    grep -v '^go: downloading ' "$log" | tail -n 60 >&2
    rm -f "$log"
    return 1
  fi
}
