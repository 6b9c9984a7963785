#!/usr/bin/env bash
# Builds kwok (sigs.k8s.io/kwok/cmd/kwok) from its Go module into a cache outside the work tree, once,
# and copies the module's stock Stage definitions (kustomize/stage/{node,pod}) beside it; the cluster
# tier picks and adjusts its stages from these (tests/cluster/kwokctl.py). A later call whose stamp
# matches this module (go.mod, go.sum, tools.go, this script) builds nothing.
#
#   tests/cluster/kwok/build.sh          # prints the folder (kwok, stage/) on its last line
#
# NVCRE_KWOK_DIR overrides the folder; NVCRE_KWOK_NO_BUILD=1 fails (exit 4) instead of building.
# The Go caches are the control plane's: $NVCRE_CACHE_HOME/go/{mod,build}.
# Two callers at once (make dev beside make test-cluster, two clones): one builds, the other waits for
# it and prints its folder (tests/cluster/build-lock.sh); a failed build leaves nothing behind.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../build-lock.sh"  # build_lock, build_dir, publish
kwok_version="v0.8.0"
cache_home="${NVCRE_CACHE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/nvcre-hooks}"
out="${NVCRE_KWOK_DIR:-$cache_home/kwok/$kwok_version}"
stamp_value="$(cat "$here/go.mod" "$here/go.sum" "$here/tools.go" "$here/build.sh" | sha256sum | cut -c1-16)"

built() {  # the stamp matches and every output is there
  [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp_value" ]] \
    && [[ -x "$out/kwok" && -d "$out/stage" ]]
}

if built; then
  echo "kwok: cached in $out" >&2
  echo "$out"
  exit 0
fi

if [[ -n "${NVCRE_KWOK_NO_BUILD:-}" ]]; then
  echo "kwok: not built yet in $out (run make kwok)" >&2; exit 4
fi
[[ -x /usr/local/go/bin/go ]] && export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "kwok: no 'go' on PATH; the cluster tier needs Go >= 1.26" >&2; exit 3; }
export GOMODCACHE="${GOMODCACHE_OVERRIDE:-$cache_home/go/mod}"
export GOCACHE="${GOCACHE_OVERRIDE:-$cache_home/go/build}"
export GOFLAGS="-mod=readonly -buildvcs=false"
export CGO_ENABLED=0
build_lock "kwok" "$out"
if built; then
  echo "kwok: built meanwhile by another caller in $out" >&2
  echo "$out"
  exit 0
fi
build_dir "$out"
mkdir "$build_tmp/stage"
started=$(date +%s)
cd "$here"
echo "kwok: building $kwok_version into $out (Go caches in $cache_home/go)" >&2
go_step "kwok" kwok go build -trimpath -ldflags "-s -w" -o "$build_tmp/kwok" sigs.k8s.io/kwok/cmd/kwok
module_dir="$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
for kind in node pod; do
  cp -r "$module_dir/kustomize/stage/$kind" "$build_tmp/stage/$kind"
done
find "$build_tmp/stage" -name testdata -prune -exec rm -rf {} +
chmod -R u+w "$build_tmp"
echo "$stamp_value" > "$build_tmp/.stamp"
publish "$out"
echo "kwok: built in $(( $(date +%s) - started )) s" >&2
echo "$out"
