#!/usr/bin/env bash
# Builds Kueue's manager (sigs.k8s.io/kueue/cmd/kueue) from its Go module into a cache outside the work
# tree, once, and copies Kueue's CRDs (config/components/crd/bases) and webhook configurations
# (config/components/webhook/manifests.yaml) of the same module beside it: a later call whose stamp
# matches this module (go.mod, go.sum, tools.go, this script) builds nothing.
#
#   tests/cluster/kueue/build.sh          # prints the folder (kueue, crd/, webhook.yaml) on its last line
#
# NVCRE_KUEUE_DIR overrides the folder; NVCRE_KUEUE_NO_BUILD=1 fails (exit 4) instead of building.
# The Go caches are the control plane's: $NVCRE_CACHE_HOME/go/{mod,build}.
# Two callers at once (make dev beside make test-cluster, two clones): one builds, the other waits for
# it and prints its folder (tests/cluster/build-lock.sh); a failed build leaves nothing behind.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../build-lock.sh"  # build_lock, build_dir, publish
kueue_version="v0.17.0"
cache_home="${NVCRE_CACHE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/nvcre-hooks}"
out="${NVCRE_KUEUE_DIR:-$cache_home/kueue/$kueue_version}"
stamp_value="$(cat "$here/go.mod" "$here/go.sum" "$here/tools.go" "$here/build.sh" | sha256sum | cut -c1-16)"

built() {  # the stamp matches and every output is there
  [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp_value" ]] \
    && [[ -x "$out/kueue" && -d "$out/crd" && -f "$out/webhook.yaml" ]]
}

if built; then
  echo "kueue: cached in $out" >&2
  echo "$out"
  exit 0
fi

if [[ -n "${NVCRE_KUEUE_NO_BUILD:-}" ]]; then
  echo "kueue: not built yet in $out (run make kueue)" >&2; exit 4
fi
[[ -x /usr/local/go/bin/go ]] && export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "kueue: no 'go' on PATH; the cluster tier needs Go >= 1.26" >&2; exit 3; }
export GOMODCACHE="${GOMODCACHE_OVERRIDE:-$cache_home/go/mod}"
export GOCACHE="${GOCACHE_OVERRIDE:-$cache_home/go/build}"
export GOFLAGS="-mod=readonly -buildvcs=false"
export CGO_ENABLED=0
build_lock "kueue" "$out"
if built; then
  echo "kueue: built meanwhile by another caller in $out" >&2
  echo "$out"
  exit 0
fi
build_dir "$out"
started=$(date +%s)
cd "$here"
version_pkg="sigs.k8s.io/kueue/pkg/version"
ldflags="-s -w -X $version_pkg.GitVersion=$kueue_version -X $version_pkg.BuildDate=1970-01-01T00:00:00Z"
echo "kueue: building $kueue_version into $out (Go caches in $cache_home/go)" >&2
go_step "kueue" kueue go build -trimpath -ldflags "$ldflags" -o "$build_tmp/kueue" sigs.k8s.io/kueue/cmd/kueue
module_dir="$(go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)"
cp -r "$module_dir/config/components/crd/bases" "$build_tmp/crd"
cp "$module_dir/config/components/webhook/manifests.yaml" "$build_tmp/webhook.yaml"
chmod -R u+w "$build_tmp/crd" "$build_tmp/webhook.yaml"
echo "$stamp_value" > "$build_tmp/.stamp"
publish "$out"
echo "kueue: built in $(( $(date +%s) - started )) s" >&2
echo "$out"
