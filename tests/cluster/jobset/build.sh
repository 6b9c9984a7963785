#!/usr/bin/env bash
# Builds JobSet's manager (the root package of sigs.k8s.io/jobset) from its Go module into a cache
# outside the work tree, once, and copies JobSet's CRD (config/components/crd/bases) and webhook
# configurations (config/components/webhook/manifests.yaml and the pod webhooks' objectSelector patches)
# of the same module beside it: a later call whose stamp matches this module (go.mod, go.sum, tools.go,
# this script) builds nothing.
#
#   tests/cluster/jobset/build.sh          # prints the folder (jobset-manager, crd/, webhook/) on its last line
#
# NVCRE_JOBSET_DIR overrides the folder; NVCRE_JOBSET_NO_BUILD=1 fails (exit 4) instead of building.
# The Go caches are the control plane's: $NVCRE_CACHE_HOME/go/{mod,build}.
# Two callers at once (make dev beside make test-cluster, two clones): one builds, the other waits for
# it and prints its folder (tests/cluster/build-lock.sh); a failed build leaves nothing behind.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../build-lock.sh"  # build_lock, build_dir, publish
jobset_version="v0.12.0"
cache_home="${NVCRE_CACHE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/nvcre-hooks}"
out="${NVCRE_JOBSET_DIR:-$cache_home/jobset/$jobset_version}"
stamp_value="$(cat "$here/go.mod" "$here/go.sum" "$here/tools.go" "$here/build.sh" | sha256sum | cut -c1-16)"

built() {  # the stamp matches and every output is there
  [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp_value" ]] \
    && [[ -x "$out/jobset-manager" && -d "$out/crd" && -d "$out/webhook" ]]
}

if built; then
  echo "jobset: cached in $out" >&2
  echo "$out"
  exit 0
fi

if [[ -n "${NVCRE_JOBSET_NO_BUILD:-}" ]]; then
  echo "jobset: not built yet in $out (run make jobset)" >&2; exit 4
fi
[[ -x /usr/local/go/bin/go ]] && export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "jobset: no 'go' on PATH; the cluster tier needs Go >= 1.26" >&2; exit 3; }
export GOMODCACHE="${GOMODCACHE_OVERRIDE:-$cache_home/go/mod}"
export GOCACHE="${GOCACHE_OVERRIDE:-$cache_home/go/build}"
export GOFLAGS="-mod=readonly -buildvcs=false"
export CGO_ENABLED=0
build_lock "jobset" "$out"
if built; then
  echo "jobset: built meanwhile by another caller in $out" >&2
  echo "$out"
  exit 0
fi
build_dir "$out"
mkdir "$build_tmp/webhook"
started=$(date +%s)
cd "$here"
echo "jobset: building $jobset_version into $out (Go caches in $cache_home/go)" >&2
go_step "jobset" jobset-manager go build -trimpath -ldflags "-s -w" -o "$build_tmp/jobset-manager" sigs.k8s.io/jobset
module_dir="$(go list -m -f '{{.Dir}}' sigs.k8s.io/jobset)"
cp -r "$module_dir/config/components/crd/bases" "$build_tmp/crd"
cp "$module_dir/config/components/webhook/manifests.yaml" "$build_tmp/webhook/manifests.yaml"
cp "$module_dir"/config/components/webhook/patches/*.yaml "$build_tmp/webhook/"
chmod -R u+w "$build_tmp"
echo "$stamp_value" > "$build_tmp/.stamp"
publish "$out"
echo "jobset: built in $(( $(date +%s) - started )) s" >&2
echo "$out"
